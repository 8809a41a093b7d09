import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { InvokeCommand, InvokeCommandOutput } from "@aws-sdk/client-lambda";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { LAMBDA_FUNCTION_ARN } from "@jobsched/contract";
import { z } from "zod";
import { createSqsClient } from "../lambdas/adapters/clients";
import type { LambdaLike, TargetReach } from "../lambdas/adapters/targets/target-invoker";

/** The local functions file: function ARN -> module path (relative to the file), default export or `handler`. */
export const DEFAULT_FUNCTIONS_FILE = "local/functions.json";

const functionsFile = z.record(
  z.string().regex(LAMBDA_FUNCTION_ARN, "keys must be Lambda function ARNs"),
  z.string().min(1),
);

type Handler = (event: unknown, context: unknown) => unknown;

/**
 * Lambda runs an asynchronous invocation that throws twice more, about a minute and then two
 * minutes later; the local stand-in does the same.
 */
export const ASYNC_RETRY_DELAYS_MS: readonly number[] = [60_000, 120_000];

/**
 * `lambda` targets on `npm start`: each function ARN in the functions file names a module whose
 * `handler` (or default export) is called with the run's envelope, as Lambda would invoke it.
 * Synchronously (`RequestResponse`), a thrown error is a function error (a failed attempt);
 * asynchronously (`Event`, decision 0033), the invoke answers 202 at once and the handler runs
 * after it, a throw logged and retried as Lambda retries. An ARN not in the file is the
 * ResourceNotFoundException Lambda would answer (fails for good), with either invocation.
 */
export class LocalFunctions implements LambdaLike {
  private readonly modules = new Map<string, Promise<Handler>>();

  constructor(
    private readonly paths: ReadonlyMap<string, string>,
    private readonly asyncRetryDelaysMs: readonly number[] = ASYNC_RETRY_DELAYS_MS,
    /** Where an asynchronous invocation's failures are told (Lambda: the function's logs). */
    private readonly onAsyncError: (message: string) => void = (message) => console.error(message),
  ) {}

  static fromFile(path: string): LocalFunctions {
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch {
      return new LocalFunctions(new Map());
    }
    const parsed = functionsFile.safeParse(JSON.parse(text));
    if (!parsed.success) {
      throw new Error(
        `${path}: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
      );
    }
    const base = dirname(resolve(path));
    return new LocalFunctions(
      new Map(
        Object.entries(parsed.data).map(([arn, file]) => [
          arn,
          isAbsolute(file) ? file : resolve(base, file),
        ]),
      ),
    );
  }

  async send(command: InvokeCommand): Promise<InvokeCommandOutput> {
    const { FunctionName = "", Payload, InvocationType } = command.input;
    const path = this.paths.get(FunctionName) ?? this.paths.get(FunctionName.replace(/:[^:]+$/, ""));
    if (!path) {
      throw Object.assign(
        new Error(`Function not found: ${FunctionName} (not in the local functions file)`),
        {
          name: "ResourceNotFoundException",
          $metadata: { httpStatusCode: 404 },
        },
      );
    }
    const event = JSON.parse(
      typeof Payload === "string" ? Payload : Buffer.from(Payload as Uint8Array).toString("utf8"),
    );
    if (InvocationType === "Event") {
      this.runDetached(path, FunctionName, event, 0);
      return { $metadata: {}, StatusCode: 202 };
    }
    const handler = await this.load(path);
    try {
      const result = await handler(event, { functionName: FunctionName, awsRequestId: crypto.randomUUID() });
      return { $metadata: {}, StatusCode: 200, Payload: encode(result ?? null) };
    } catch (error) {
      return {
        $metadata: {},
        StatusCode: 200,
        FunctionError: "Unhandled",
        Payload: encode({ errorType: (error as Error).name, errorMessage: (error as Error).message }),
      };
    }
  }

  /** An asynchronous invocation: after the invoke's answer, retried as Lambda retries a throw. */
  private runDetached(path: string, functionName: string, event: unknown, retries: number): void {
    setImmediate(async () => {
      try {
        const handler = await this.load(path);
        await handler(event, { functionName, awsRequestId: crypto.randomUUID() });
      } catch (error) {
        const delay = this.asyncRetryDelaysMs[retries];
        this.onAsyncError(
          `local function ${functionName} (asynchronous invocation) failed: ${(error as Error).message}` +
            (delay === undefined ? "; no retries left" : `; retrying in ${delay / 1000} s`),
        );
        if (delay !== undefined) {
          setTimeout(() => this.runDetached(path, functionName, event, retries + 1), delay).unref();
        }
      }
    });
  }

  private load(path: string): Promise<Handler> {
    let loaded = this.modules.get(path);
    if (!loaded) {
      loaded = import(pathToFileURL(path).href).then((module: { handler?: Handler; default?: Handler }) => {
        const handler = module.handler ?? module.default;
        if (typeof handler !== "function") throw new Error(`${path} exports no handler function`);
        return handler;
      });
      this.modules.set(path, loaded);
    }
    return loaded;
  }
}

function encode(value: unknown): InvokeCommandOutput["Payload"] {
  return new TextEncoder().encode(JSON.stringify(value)) as InvokeCommandOutput["Payload"];
}

/**
 * Targets on the local runtime: functions from the functions file, queues on the SQS emulator
 * (the dev credentials; the role is not assumed, there is no STS), webhooks as in AWS.
 */
export function localReach(functions: LocalFunctions, sqsEndpoint: string): TargetReach {
  // Every queue is on the emulator (its URLs name hosts like sqs.us-east-1.localhost).
  const sqs: SQSClient = createSqsClient({ region: "us-east-1", sqsEndpoint });
  return { lambda: () => functions, sqs: () => sqs };
}
