import type { DeadLetterResponse, DeadLettersPageResponse, ReplayAllResponse } from "@jobsched/contract";
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
        await cli.call<DeadLettersPageResponse>("GET", "/api/v1/dead-letters", {
          query: { limit: o.limit, cursor: o.cursor },
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
    .option("--all", "replay every one of your dead letters")
    .action(async (runId: string | undefined, o: { all?: boolean }) => {
      if (!runId && !o.all) throw new CliError("give a run id, or --all");
      if (runId && o.all) throw new CliError("give a run id or --all, not both");
      if (runId) {
        const path = `/api/v1/dead-letters/${encodeURIComponent(runId)}/replay`;
        cli.print(
          await cli.call<DeadLetterResponse>("POST", path),
          (b) => `replayed ${b.runId} (replay ${b.replays})`,
        );
        return;
      }
      cli.print(
        await cli.call<ReplayAllResponse>("POST", "/api/v1/dead-letters/replay"),
        (b) =>
          `replayed ${b.replayed} run(s)` +
          (b.skippedPaused > 0 ? `; ${b.skippedPaused} of paused jobs left (resume them first)` : "") +
          (b.complete === false ? "; more remain: run it again" : ""),
      );
    });
}
