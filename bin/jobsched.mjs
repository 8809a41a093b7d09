#!/usr/bin/env node
// Entry point for the `jobsched` command: loads the TypeScript CLI through tsx, so the
// project needs no build step.
import { register } from "tsx/esm/api";

register();
const { main } = await import("./jobsched.ts");
process.exitCode = await main(process.argv.slice(2));
