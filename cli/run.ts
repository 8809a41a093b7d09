/** The CLI's entry point, bundled by scripts/build-cli.mjs into dist/jobsched.mjs. */
import { main } from "./main";

process.exitCode = await main(process.argv.slice(2));
