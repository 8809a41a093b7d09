import { fork } from "node:child_process";
import { resolve } from "node:path";
import type { Emulator } from "./emulators";

/**
 * An emulator (dynalite or fauxqs) in a child process of its own, so that it does not share
 * the event loop with the handlers and workers. For benchmarks bound by emulator throughput.
 */
export async function startEmulatorProcess(kind: "dynamodb" | "sqs"): Promise<Emulator> {
  const child = fork(resolve(import.meta.dirname, "emulator-child.ts"), [kind], {
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const endpoint = await new Promise<string>((done, fail) => {
    child.once("message", (message) => done(String((message as { endpoint: string }).endpoint)));
    child.once("exit", (code) => fail(new Error(`${kind} emulator process exited with ${code}`)));
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
