import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { resolve } from "node:path";

/** The local runtime (`npm start`) as a child process, for tests and scripts that kill and restart it. */
export interface RunningRuntime {
  readonly url: string;
  readonly process: ChildProcess;
  output(): string;
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

const ROOT = resolve(import.meta.dirname, "..");

/**
 * `port` 0 (the default) lets the system choose; a restart that clients must find again passes
 * one. `logLevel` is the handlers' (Powertools) log level: WARN keeps test output small. `env`
 * adds to the runtime's environment (the crash loop's JOBSCHED_FAULT_RATE, say).
 */
export async function startLocalRuntime(
  dataDir: string,
  port = 0,
  logLevel = "WARN",
  env: Readonly<Record<string, string>> = {},
): Promise<RunningRuntime> {
  const child = spawn(process.execPath, ["--import", "tsx", "local/main.ts"], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...env,
      PORT: String(port),
      JOBSCHED_DATA_DIR: dataDir,
      POWERTOOLS_LOG_LEVEL: logLevel,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });

  const url = await new Promise<string>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`runtime did not start:\n${output}`)), 30_000);
    const check = () => {
      const match = /API\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        done(match[1]);
      }
    };
    child.stdout?.on("data", check);
    child.once("exit", (code) => fail(new Error(`runtime exited with ${code}:\n${output}`)));
  });

  return {
    url,
    process: child,
    output: () => output,
    async kill(signal) {
      if (child.exitCode !== null) return child.exitCode;
      const exited = once(child, "exit");
      child.kill(signal);
      const [code] = (await exited) as [number | null];
      return code;
    },
  };
}
