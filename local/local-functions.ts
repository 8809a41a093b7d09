import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { InvokeCommand, InvokeCommandOutput } from "@aws-sdk/client-lambda";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { z } from "zod";
import { createSqsClient } from "../lambdas/adapters/clients";
import type { LambdaLike, TargetReach } from "../lambdas/adapters/targets/target-invoker";
import { LAMBDA_FUNCTION_ARN } from "../lambdas/core/schemas";

/** The local functions file: function ARN -> module path (relative to the file), default export or `handler`. */
export const DEFAULT_FUNCTIONS_FILE = "local/functions.json";

const functionsFile = z.record(
  z.string().regex(LAMBDA_FUNCTION_ARN, "keys must be Lambda function ARNs"),
  z.string().min(1),
);

type Handler = (event: unknown, context: unknown) => unknown;

/**
 * `lambda` targets on `npm start`: each function ARN in the functions file names a module whose
 * `handler` (or default export) is called with the run's envelope, as Lambda would invoke it. A
 * thrown error is a function error (a failed attempt); an ARN not in the file is the
 * ResourceNotFoundException Lambda would answer (fails for good).
 */
export class LocalFunctions implements LambdaLike {
  private readonly modules = new Map<string, Promise<Handler>>();

  constructor(private readonly paths: ReadonlyMap<string, string>) {}

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
    const { FunctionName = "", Payload } = command.input;
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
    const handler = await this.load(path);
    const event = JSON.parse(
      typeof Payload === "string" ? Payload : Buffer.from(Payload as Uint8Array).toString("utf8"),
    );
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
