import type { SQSClient } from "@aws-sdk/client-sqs";
import { MAX_DELAY_SECONDS, MAX_VISIBILITY_SECONDS } from "../lambdas/core/aws-limits";

/**
 * Holds an SQS client to the limits AWS enforces, whatever the emulator lets through: the
 * local runtime and the integration tests run on it, so a request that SQS would refuse fails
 * here as it would in AWS instead of waiting for the first deployment. Our own implementation
 * of SQS's documented rules, not the emulator's:
 *
 * - VisibilityTimeout 0-43,200 s, and never reaching past 12 hours after the receive that hid
 *   the message ("Total VisibilityTimeout for the message is beyond the limit");
 * - DelaySeconds 0-900; MaxNumberOfMessages 1-10; WaitTimeSeconds 0-20; at most 10 entries
 *   in a batch; a message body of at most 1 MiB;
 * - a MessageGroupId (a fair queue's tenant on a standard queue) of 1-128 characters, each
 *   alphanumeric or punctuation (!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~).
 *
 * A single call that breaks a rule is refused with InvalidParameterValue; in a visibility
 * batch, as SQS does, only the offending entries fail (in `Failed`) and the rest go through.
 */
const MAX_BATCH_ENTRIES = 10;
const MAX_WAIT_SECONDS = 20;
const MAX_MESSAGE_BYTES = 1_048_576;
const MAX_MESSAGE_GROUP_ID_LENGTH = 128;
const MESSAGE_GROUP_ID_CHARACTER = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]$/;
/** Receipt handles older than this cannot be changed any more; forgotten on the next sweep. */
const FORGET_AFTER_MS = (MAX_VISIBILITY_SECONDS + 60) * 1000;

type Input = Record<string, unknown>;
interface Entry {
  readonly Id?: string;
  readonly ReceiptHandle?: string;
  readonly VisibilityTimeout?: number;
  readonly DelaySeconds?: number;
  readonly MessageBody?: string;
  readonly MessageGroupId?: string;
}

export class SqsLimitError extends Error {
  override readonly name = "InvalidParameterValue";
  readonly $fault = "client";
}

export function withSqsLimits(sqs: SQSClient, now: () => number = Date.now): SQSClient {
  const receivedAt = new Map<string, number>();
  let receives = 0;

  /** Why SQS would refuse this visibility change, or undefined. */
  const visibilityProblem = (handle: string | undefined, seconds: number | undefined) => {
    if (seconds === undefined) return undefined;
    if (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_VISIBILITY_SECONDS) {
      return `Value ${seconds} for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and ${MAX_VISIBILITY_SECONDS}.`;
    }
    const at = handle === undefined ? undefined : receivedAt.get(handle);
    if (at !== undefined && now() - at + seconds * 1000 > MAX_VISIBILITY_SECONDS * 1000) {
      return `Total VisibilityTimeout for the message is beyond the limit [${MAX_VISIBILITY_SECONDS} seconds] (received ${Math.round((now() - at) / 1000)} s ago, asked for ${seconds} s more)`;
    }
    return undefined;
  };
  const sendProblem = (entry: Entry) => {
    const delay = entry.DelaySeconds;
    if (delay !== undefined && (!Number.isInteger(delay) || delay < 0 || delay > MAX_DELAY_SECONDS)) {
      return `Value ${delay} for parameter DelaySeconds is invalid. Reason: Must be between 0 and ${MAX_DELAY_SECONDS}.`;
    }
    if (Buffer.byteLength(entry.MessageBody ?? "", "utf8") > MAX_MESSAGE_BYTES) {
      return `The message body is longer than ${MAX_MESSAGE_BYTES} bytes.`;
    }
    const group = entry.MessageGroupId;
    if (
      group !== undefined &&
      (group.length < 1 ||
        group.length > MAX_MESSAGE_GROUP_ID_LENGTH ||
        ![...group].every((c) => MESSAGE_GROUP_ID_CHARACTER.test(c)))
    ) {
      return `Value ${group} for parameter MessageGroupId is invalid. Reason: Must be 1-${MAX_MESSAGE_GROUP_ID_LENGTH} alphanumeric or punctuation characters.`;
    }
    return undefined;
  };
  const refuse = (problem: string | undefined) => {
    if (problem !== undefined) throw new SqsLimitError(problem);
  };
  const checkBatchSize = (entries: unknown) => {
    const count = Array.isArray(entries) ? entries.length : 0;
    if (count > MAX_BATCH_ENTRIES)
      refuse(`Maximum number of entries per request are ${MAX_BATCH_ENTRIES}. You have sent ${count}.`);
  };

  sqs.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Input;
      switch (context.commandName) {
        case "ReceiveMessageCommand": {
          const max = input.MaxNumberOfMessages as number | undefined;
          if (max !== undefined && (max < 1 || max > MAX_BATCH_ENTRIES)) {
            refuse(
              `Value ${max} for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10.`,
            );
          }
          const wait = input.WaitTimeSeconds as number | undefined;
          if (wait !== undefined && (wait < 0 || wait > MAX_WAIT_SECONDS)) {
            refuse(`Value ${wait} for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20.`);
          }
          refuse(visibilityProblem(undefined, input.VisibilityTimeout as number | undefined));
          const result = await next(args);
          const at = now();
          const output = result.output as { Messages?: Array<{ ReceiptHandle?: string }> };
          for (const m of output.Messages ?? []) if (m.ReceiptHandle) receivedAt.set(m.ReceiptHandle, at);
          if (++receives % 10_000 === 0) {
            for (const [handle, when] of receivedAt)
              if (at - when > FORGET_AFTER_MS) receivedAt.delete(handle);
          }
          return result;
        }
        case "ChangeMessageVisibilityCommand":
          refuse(visibilityProblem(input.ReceiptHandle as string, input.VisibilityTimeout as number));
          return next(args);
        case "ChangeMessageVisibilityBatchCommand": {
          checkBatchSize(input.Entries);
          const entries = (input.Entries ?? []) as Entry[];
          const failed = entries.flatMap((e) => {
            const problem = visibilityProblem(e.ReceiptHandle, e.VisibilityTimeout);
            return problem === undefined
              ? []
              : [{ Id: e.Id, Code: "InvalidParameterValue", SenderFault: true, Message: problem }];
          });
          if (failed.length === 0) return next(args);
          const rest = entries.filter((e) => !failed.some((f) => f.Id === e.Id));
          if (rest.length === 0)
            return { output: { Successful: [], Failed: failed, $metadata: {} }, response: {} };
          const result = await next({ ...args, input: { ...input, Entries: rest } as typeof args.input });
          const output = result.output as { Failed?: unknown[] };
          return { ...result, output: { ...result.output, Failed: [...(output.Failed ?? []), ...failed] } };
        }
        case "SendMessageCommand":
          refuse(sendProblem(input as Entry));
          return next(args);
        case "SendMessageBatchCommand":
          checkBatchSize(input.Entries);
          for (const entry of (input.Entries ?? []) as Entry[]) refuse(sendProblem(entry));
          return next(args);
        case "DeleteMessageCommand":
          receivedAt.delete(input.ReceiptHandle as string);
          return next(args);
        default:
          return next(args);
      }
    },
    { step: "initialize", name: "jobschedSqsAwsLimits" },
  );
  return sqs;
}
