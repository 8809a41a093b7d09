import type { Readable } from "node:stream";
import { HttpResponse } from "@smithy/protocol-http";
import {
  type DeserializeHandlerOutput,
  type HandlerExecutionContext,
  type MetadataBearer,
  type Pluggable,
  SMITHY_CONTEXT_KEY,
} from "@smithy/types";
import { type FaultSubjects, ReceiptBook, subjectsInText, subjectsOfInput } from "./aws-fault-subjects";

/**
 * Chaos fault injection for the local runtime's DynamoDB and SQS clients (decision 0038): a
 * share of the requests fails as AWS fails them, for the crash-loop test. Only the local
 * runtime uses it, and only when JOBSCHED_FAULT_RATE is set (aws-fault-env.ts); it is not part
 * of the Lambda code.
 *
 * The injection sits at the bottom of the middleware stack, in the `deserialize` step below the
 * SDK's deserializer, so each HTTP attempt is its own draw and the faults pass through
 * everything a real answer does: the SDK's deserializer turns a made-up error answer into its
 * own exception class (`ProvisionedThroughputExceededException`, `RequestThrottled`, ...) with
 * `$metadata.httpStatusCode`, and the retry middleware (`finalizeRequest`, above) classifies and
 * retries it with its backoff and retry quota, as it would AWS's answer.
 *
 * The faults, as AWS documents them:
 * - throttling (400): DynamoDB's ProvisionedThroughputExceededException or ThrottlingException,
 *   SQS's RequestThrottled or ThrottlingException; refused before anything happened;
 * - 503 ServiceUnavailable: refused before anything happened;
 * - 500 InternalServerError (SQS: InternalFailure): may or may not have been applied;
 * - a request that never answers until the request timeout, or a reset socket: may have
 *   reached the service and taken effect, with only its answer lost. A retried write then meets
 *   its own effect (a conditional write's condition fails, a message is sent twice, a received
 *   message stays hidden until its visibility timeout ends).
 */
export type AwsService = "dynamodb" | "sqs";

export const AwsFaultKind = {
  Throttle: "throttle",
  ServerError: "server-error",
  Unavailable: "unavailable",
  Timeout: "timeout",
  SocketError: "socket-error",
} as const;
export type AwsFaultKind = (typeof AwsFaultKind)[keyof typeof AwsFaultKind];

/** What the injection records: each fault, each call the SDK's retries could not save, a tally. */
export type AwsFaultEvent =
  | ({
      readonly kind: "aws-fault";
      /** When the attempt began, and when its error was raised (after a timeout's wait). */
      readonly at: number;
      readonly until: number;
      readonly service: AwsService;
      /** The command without its suffix: UpdateItem, DeleteMessageBatch... */
      readonly operation: string;
      readonly fault: AwsFaultKind;
      /** The error's name (or its code, for a socket error). */
      readonly error: string;
      /** Whether the request was carried out before its answer was lost. */
      readonly applied: boolean;
      /** The call's attempt (1 = the first; the SDK retries after it). */
      readonly attempt: number;
    } & FaultSubjects)
  | {
      readonly kind: "aws-fault-surfaced";
      readonly at: number;
      readonly service: AwsService;
      readonly operation: string;
      readonly error: string;
      readonly attempts: number;
    }
  | {
      readonly kind: "aws-requests";
      readonly at: number;
      readonly service: AwsService;
      readonly count: number;
    };

export interface AwsFaultSettings {
  /** The share of HTTP attempts that fail, 0-1 (0.02: one in fifty). */
  readonly rate: number;
  /**
   * How long a request that never answers waits before the timeout error: the request timeout
   * a deployment would give its clients. (These clients set none: a real hung request would
   * wait for the SDK's socket timeout, 300 s for DynamoDB and 900 s for SQS.)
   */
  readonly timeoutMs: number;
  readonly record?: (event: AwsFaultEvent) => void;
  /** Attempts counted before each `aws-requests` record (default 200). */
  readonly tallyEvery?: number;
  readonly random?: () => number;
  readonly now?: () => number;
}

interface FaultShape {
  readonly fault: AwsFaultKind;
  readonly weight: number;
  /** The answer's status and error type (an SDK error name); none for a timeout or a socket error. */
  readonly status?: number;
  readonly type?: string;
  readonly message?: string;
  /** never: refused up front; maybe: half the time carried out before the answer was lost. */
  readonly applied: "never" | "maybe";
}

const DYNAMODB_NAMESPACE = "com.amazonaws.dynamodb.v20120810#";
const SQS_NAMESPACE = "com.amazonaws.sqs#";
const COMMON: readonly FaultShape[] = [
  { fault: AwsFaultKind.Timeout, weight: 0.15, applied: "maybe" },
  { fault: AwsFaultKind.SocketError, weight: 0.15, applied: "maybe" },
];
/** Each service's faults and their shares (throttling 35%, 500 20%, 503 15%, timeouts 30%). */
export const FAULT_MENU: Readonly<Record<AwsService, readonly FaultShape[]>> = {
  dynamodb: [
    {
      fault: AwsFaultKind.Throttle,
      weight: 0.2,
      status: 400,
      type: "ProvisionedThroughputExceededException",
      message: "The level of configured provisioned throughput for the table was exceeded.",
      applied: "never",
    },
    {
      fault: AwsFaultKind.Throttle,
      weight: 0.15,
      status: 400,
      type: "ThrottlingException",
      message: "Rate of requests exceeds the allowed throughput.",
      applied: "never",
    },
    {
      fault: AwsFaultKind.ServerError,
      weight: 0.2,
      status: 500,
      type: "InternalServerError",
      message: "Internal server error",
      applied: "maybe",
    },
    {
      fault: AwsFaultKind.Unavailable,
      weight: 0.15,
      status: 503,
      type: "ServiceUnavailable",
      message: "The service is currently unavailable or busy.",
      applied: "never",
    },
    ...COMMON,
  ],
  sqs: [
    {
      fault: AwsFaultKind.Throttle,
      weight: 0.2,
      status: 400,
      type: "RequestThrottled",
      message: "Request is throttled.",
      applied: "never",
    },
    {
      fault: AwsFaultKind.Throttle,
      weight: 0.15,
      status: 400,
      type: "ThrottlingException",
      message: "Rate exceeded",
      applied: "never",
    },
    {
      fault: AwsFaultKind.ServerError,
      weight: 0.2,
      status: 500,
      type: "InternalFailure",
      message: "The request processing has failed because of an unknown error, exception or failure.",
      applied: "maybe",
    },
    {
      fault: AwsFaultKind.Unavailable,
      weight: 0.15,
      status: 503,
      type: "ServiceUnavailable",
      message: "The request has failed due to a temporary failure of the server.",
      applied: "never",
    },
    ...COMMON,
  ],
};

/** The answer AWS gives for an error, in the JSON 1.0 protocol both clients speak. */
function errorAnswer(service: AwsService, shape: FaultShape): HttpResponse {
  const namespace = service === "dynamodb" ? DYNAMODB_NAMESPACE : SQS_NAMESPACE;
  return new HttpResponse({
    statusCode: shape.status ?? 500,
    headers: {
      "content-type": "application/x-amz-json-1.0",
      "x-amzn-requestid": `injected-${Math.random().toString(36).slice(2)}`,
      // SQS is query-compatible: it names the error's query code too (`Code;Sender|Receiver`).
      ...(service === "sqs"
        ? { "x-amzn-query-error": `${shape.type};${(shape.status ?? 500) < 500 ? "Sender" : "Receiver"}` }
        : {}),
    },
    body: Buffer.from(JSON.stringify({ __type: `${namespace}${shape.type}`, message: shape.message })),
  });
}

/** The error Node's HTTP handler raises when a request outlives its timeout. */
function timeoutError(ms: number): Error {
  return Object.assign(
    new Error(`@smithy/node-http-handler - the request socket timed out after ${ms} ms of inactivity.`),
    { name: "TimeoutError" },
  );
}

/** The error Node raises when the other end resets the connection. */
function socketError(): Error {
  return Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET", errno: -104, syscall: "read" });
}

function abortError(signal: AbortSignal): Error {
  return Object.assign(new Error("Request aborted", { cause: signal.reason }), { name: "AbortError" });
}

function waitFor(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((done, fail) => {
    if (signal?.aborted) return fail(abortError(signal));
    const onAbort = () => {
      clearTimeout(timer);
      fail(abortError(signal as AbortSignal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      done();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Reads (and so frees) a real answer that the fault throws away; its text, for its subjects. */
async function drain(response: unknown): Promise<string> {
  const body = (response as { body?: unknown } | undefined)?.body;
  if (body instanceof Uint8Array) return Buffer.from(body).toString("utf8");
  if (typeof body === "string") return body;
  const stream = body as Readable | undefined;
  if (!stream || typeof stream[Symbol.asyncIterator] !== "function") return "";
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks).toString("utf8");
}

function pick(menu: readonly FaultShape[], draw: number): FaultShape {
  const total = menu.reduce((sum, shape) => sum + shape.weight, 0);
  let left = draw * total;
  for (const shape of menu) {
    left -= shape.weight;
    if (left < 0) return shape;
  }
  return menu[menu.length - 1] as FaultShape;
}

/** Per call: how many attempts went down the stack, and which of them was failed on purpose. */
const CALL_STATE = "jobschedAwsFaults";
interface CallState {
  attempts: number;
  faultedAttempt: number;
}

/**
 * The plugin: `client.middlewareStack.use(awsFaultPlugin("sqs", settings))`. One per client;
 * its receipt book (which run each SQS receipt handle stands for) is that client's.
 */
export function awsFaultPlugin<Input extends object, Output extends MetadataBearer>(
  service: AwsService,
  settings: AwsFaultSettings,
): Pluggable<Input, Output> {
  const random = settings.random ?? Math.random;
  const now = settings.now ?? Date.now;
  const record = settings.record ?? (() => undefined);
  const tallyEvery = settings.tallyEvery ?? 200;
  const receipts = new ReceiptBook();
  let tally = 0;
  const menu = FAULT_MENU[service];

  return {
    applyToStack(stack) {
      // Outermost: one entry per call, around all of its attempts.
      stack.add(
        (next, context: HandlerExecutionContext) => async (args) => {
          const state: CallState = { attempts: 0, faultedAttempt: 0 };
          context[CALL_STATE] = state;
          try {
            const result = await next(args);
            if (context.commandName === "ReceiveMessageCommand") receipts.noteReceived(result.output);
            return result;
          } catch (error) {
            if (state.attempts > 0 && state.faultedAttempt === state.attempts) {
              record({
                kind: "aws-fault-surfaced",
                at: now(),
                service,
                operation: operationOf(context),
                error: (error as Error).name,
                attempts: state.attempts,
              });
            }
            throw error;
          }
        },
        { step: "initialize", priority: "high", name: "jobschedAwsFaultCalls", override: true },
      );
      // Innermost: each HTTP attempt, below the deserializer and the retry middleware.
      stack.add(
        (next, context: HandlerExecutionContext) =>
          async (args): Promise<DeserializeHandlerOutput<Output>> => {
            const state = context[CALL_STATE] as CallState | undefined;
            if (state) state.attempts += 1;
            tally += 1;
            if (tally >= tallyEvery) {
              record({ kind: "aws-requests", at: now(), service, count: tally });
              tally = 0;
            }
            if (random() >= settings.rate) return next(args);

            const shape = pick(menu, random());
            const applied = shape.applied === "maybe" && random() < 0.5;
            const at = now();
            const signal = (context[SMITHY_CONTEXT_KEY] as { abortSignal?: AbortSignal } | undefined)
              ?.abortSignal;
            let subjects = subjectsOfInput(args.input, receipts);
            if (applied) {
              // Carried out; only the answer is lost (its messages, for a receive, stay hidden).
              const answered = await next(args);
              const seen = subjectsInText(await drain(answered.response));
              subjects = {
                jobs: [...new Set([...subjects.jobs, ...seen.jobs])],
                runs: [...new Set([...subjects.runs, ...seen.runs])],
              };
            }
            if (shape.fault === AwsFaultKind.Timeout)
              await waitFor(settings.timeoutMs - (now() - at), signal);
            if (state) state.faultedAttempt = state.attempts;
            const error =
              shape.fault === AwsFaultKind.Timeout
                ? timeoutError(settings.timeoutMs)
                : shape.fault === AwsFaultKind.SocketError
                  ? socketError()
                  : undefined;
            record({
              kind: "aws-fault",
              at,
              until: now(),
              service,
              operation: operationOf(context),
              fault: shape.fault,
              error: error ? ((error as { code?: string }).code ?? error.name) : (shape.type ?? ""),
              applied,
              attempt: state?.attempts ?? 1,
              ...subjects,
            });
            if (error) throw error;
            return { response: errorAnswer(service, shape) };
          },
        { step: "deserialize", priority: "low", name: "jobschedAwsFaultInjection", override: true },
      );
    },
  };
}

function operationOf(context: HandlerExecutionContext): string {
  return String(context.commandName ?? "").replace(/Command$/, "");
}
