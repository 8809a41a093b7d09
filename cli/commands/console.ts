import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { type ConsoleAssets, startConsoleServer } from "../console/console-server";
import { type CliContext, CliError } from "../context";

/**
 * `jobsched console`: the web console on 127.0.0.1, its API calls signed with the operator's
 * credentials (the standard chain, or --profile) and relayed to --endpoint. It prints the
 * address to open, with this session's token (decision 0031). The page is built
 * beside the CLI bundle (dist/console/, scripts/build-cli.mjs).
 */
export function consoleCommand(program: Command, cli: CliContext): void {
  program
    .command("console")
    .description(
      "serve the web console on 127.0.0.1 (open the link it prints: it carries this run's token), signing its API calls with your AWS credentials",
    )
    .option("--port <n>", "port on 127.0.0.1 (default: 8790; 0 picks a free one)", "8790")
    .action(async (o: { port: string }) => {
      const port = Number(o.port);
      if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new CliError("--port: must be 0-65535");
      const g = cli.globals();
      const folder = new URL("./console/", import.meta.url);
      let assets: ConsoleAssets;
      try {
        assets = {
          html: readFileSync(new URL("index.html", folder), "utf8"),
          script: readFileSync(new URL("app.js", folder), "utf8"),
          style: readFileSync(new URL("app.css", folder), "utf8"),
        };
      } catch {
        throw new CliError("the console's page is not built: run `npm run build:cli`");
      }
      const server = await startConsoleServer({
        api: { endpoint: g.endpoint, region: g.region, credentials: cli.credentials() },
        assets,
        port,
      });
      // Only this link carries the session's token: the page and API calls refuse to act without it.
      cli.out.log(`jobsched console: open ${server.openUrl}`);
      cli.out.log(`(API ${g.endpoint}; only that link works, this session only; Ctrl-C stops it)`);
      await new Promise<void>((stopped) => {
        process.once("SIGINT", () => void server.close().then(stopped));
        process.once("SIGTERM", () => void server.close().then(stopped));
      });
    });
}
