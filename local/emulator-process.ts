import { fork } from "node:child_process";
import { resolve } from "node:path";
import type { Emulator } from "./emulators";

/**
 * dynalite in a child process of its own, so that it has a CPU core to itself instead of
 * sharing the event loop with the handlers and workers. For benchmarks that are bound by the
 * emulator's throughput.
 */
export async function startDynamoProcess(): Promise<Emulator> {
  const child = fork(resolve(import.meta.dirname, "emulator-child.ts"), [], {
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const endpoint = await new Promise<string>((done, fail) => {
    child.once("message", (message) => done(String((message as { endpoint: string }).endpoint)));
    child.once("exit", (code) => fail(new Error(`dynalite process exited with ${code}`)));
  });
  return {
    endpoint,
    close: () =>
      new Promise<void>((done) => {
        child.once("exit", () => done());
        child.kill("SIGTERM");
      }),
  };
}
