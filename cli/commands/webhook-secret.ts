import type { Command } from "commander";
import type { CliContext } from "../context";

/** `jobsched webhook-secret rotate|show`: the secret that signs your https targets' deliveries. */
export function webhookSecretCommand(program: Command, cli: CliContext): void {
  const secret = program
    .command("webhook-secret")
    .description("the Standard Webhooks secret that signs your https push deliveries");
  secret
    .command("rotate")
    .description(
      "create the secret, or replace it: the new one signs from this answer on, the previous one too for a day; at most once a minute; shown this once",
    )
    .action(async () =>
      cli.print(await cli.client().rotateWebhookSecret(), (b) =>
        [
          b.secret ?? "",
          "",
          "Shown this once: give it to your webhook receivers' Standard Webhooks verifier (every delivery is signed with it from now on).",
          b.previousValidUntil ? `The previous secret also signs until ${b.previousValidUntil}.` : "",
        ]
          .filter((line, i) => i < 3 || line !== "")
          .join("\n"),
      ),
    );
  secret
    .command("show")
    .description("when the secret was made (never the secret itself)")
    .action(async () =>
      cli.print(
        await cli.client().getWebhookSecret(),
        (b) =>
          `created ${b.createdAt}${b.previousValidUntil ? `; the previous one signs until ${b.previousValidUntil}` : ""}`,
      ),
    );
}
