import type { Command } from "commander";
import { type CliContext, CliError, moreLine } from "../context";
import { table } from "../tables";

/** `jobsched dlq list|replay`: dead-lettered runs, listed and replayed through the API. */
export function dlqCommand(program: Command, cli: CliContext): void {
  const dlq = program.command("dlq").description("dead-lettered runs: list and replay (signed API calls)");
  dlq
    .command("list")
    .description("your dead-lettered runs, most recent first, with their last error")
    .option("--limit <n>", "page size, 1-100")
    .option("--cursor <cursor>", "from a previous page")
    .action(async (o: { limit?: string; cursor?: string }) =>
      cli.print(
        await cli.client().listDeadLetters({
          ...(o.limit === undefined ? {} : { limit: Number(o.limit) }),
          ...(o.cursor === undefined ? {} : { cursor: o.cursor }),
        }),
        (b) => {
          const rows = b.deadLetters.map((r) => [
            r.runId,
            r.type,
            r.scheduledFor,
            String(r.attempt),
            String(r.replays),
            r.error ?? "",
          ]);
          return `${table(["RUN", "TYPE", "SCHEDULED FOR", "ATTEMPTS", "REPLAYS", "LAST ERROR"], rows)}${moreLine(b.cursor)}`;
        },
      ),
    );
  dlq
    .command("replay [runId]")
    .description("replay one dead letter (same run key, attempts reset), or all with --all")
    .option("--all", "replay every one of your dead letters (as many requests as that takes)")
    .action(async (runId: string | undefined, o: { all?: boolean }) => {
      if (!runId && !o.all) throw new CliError("give a run id, or --all");
      if (runId && o.all) throw new CliError("give a run id or --all, not both");
      if (runId) {
        cli.print(
          await cli.client().replayDeadLetter(runId),
          (b) => `replayed ${b.runId} (replay ${b.replays})`,
        );
        return;
      }
      // Each request replays what its time allows; the CLI asks again until none remain.
      const progress = cli.progress({ unit: "dead letters replayed" });
      const total = await cli
        .client()
        .replayAllDeadLettersUntilDone({
          onProgress: (sofar, rounds) => progress.update(sofar.replayed, `(${rounds} request(s))`),
        })
        .finally(() => progress.stop());
      cli.print(
        total,
        (b) =>
          `replayed ${b.replayed} run(s)` +
          (b.skippedPaused > 0 ? `; ${b.skippedPaused} of paused jobs left (resume them first)` : "") +
          (b.complete ? "" : "; more remain (or failed straight back): run it again"),
      );
    });
}
