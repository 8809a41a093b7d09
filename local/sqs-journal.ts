import { appendFileSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import {
  CreateQueueCommand,
  type CreateQueueCommandInput,
  GetQueueUrlCommand,
  type MessageAttributeValue,
  SendMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { MAX_DELAY_SECONDS } from "../lambdas/core/aws-limits";

/**
 * Makes the local SQS emulator keep its messages across restarts, as SQS does (decision 0051).
 * fauxqs holds everything in memory, so a runtime killed and started again used to find every
 * queue empty, and the first repair pass re-sent each unfinished run from its item. A run made
 * but not written has no item until its lease: only its message carries it, so the queue must
 * be as durable as the one it stands in for.
 *
 * A journal file beside the table's data: every message SQS accepted (its queue, body, group,
 * attributes, and when it becomes visible) and every message deleted, each line appended before
 * the call answers its caller, and every queue created or deleted. On a start, the messages sent
 * and not deleted are sent again (at what is left of their delay) to queues made again as they
 * were created; a message in flight when the runtime died is visible again at once, as one whose
 * visibility timeout ran out. A message whose send was accepted but whose line the kill cut off
 * is lost, as its sender saw no answer (it sends again, or never counted on it); a delete cut off
 * the same way comes back once, a copy the lease step drops.
 */
export interface SqsJournal {
  /** Sends again what the journal holds, and starts the journal anew; answers how many. */
  restore(): Promise<number>;
}

type Line =
  | {
      readonly op: "sent";
      readonly id: string;
      readonly queue: string;
      readonly body: string;
      readonly group?: string | undefined;
      readonly attributes?: Record<string, MessageAttributeValue> | undefined;
      readonly visibleAt: number;
    }
  | { readonly op: "deleted"; readonly id: string }
  | { readonly op: "queue"; readonly name: string; readonly input: CreateQueueCommandInput }
  | { readonly op: "queue-deleted"; readonly name: string };

type Sent = Extract<Line, { op: "sent" }>;

/**
 * Receipt handles remembered for deletes: a handle older than this many receives is one whose
 * message was received again since (a newer handle) or is long gone.
 */
const MAX_HANDLES = 100_000;

/** The journal is rewritten with its live lines once it holds this many lines more than those. */
const COMPACT_AFTER_DEAD_LINES = 50_000;

interface BatchEntry {
  readonly Id?: string;
  readonly MessageBody?: string;
  readonly MessageGroupId?: string;
  readonly DelaySeconds?: number;
  readonly MessageAttributes?: Record<string, MessageAttributeValue>;
  readonly ReceiptHandle?: string;
}

const queueNameOf = (url: string) => url.slice(url.lastIndexOf("/") + 1);

export function withSqsJournal(sqs: SQSClient, path: string, now: () => number = Date.now): SqsJournal {
  const live = new Map<string, Sent>();
  const queues = new Map<string, CreateQueueCommandInput>();
  /** Receipt handles of received messages, to the message ids their deletes name. */
  const idsByHandle = new Map<string, string>();
  let deadLines = 0;

  const apply = (line: Line) => {
    if (line.op === "sent") live.set(line.id, line);
    else if (line.op === "deleted") live.delete(line.id);
    else if (line.op === "queue") queues.set(line.name, line.input);
    else {
      queues.delete(line.name);
      for (const [id, sent] of live) if (sent.queue === line.name) live.delete(id);
    }
  };
  const compact = () => {
    const lines = [
      ...[...queues].map(([name, input]): Line => ({ op: "queue", name, input })),
      ...live.values(),
    ];
    writeFileSync(`${path}.tmp`, lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
    renameSync(`${path}.tmp`, path);
    deadLines = 0;
  };
  const record = (lines: readonly Line[]) => {
    if (lines.length === 0) return;
    appendFileSync(path, lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
    for (const line of lines) {
      // A line that ends another (a delete, a queue gone) or repeats one (a queue made again).
      if (line.op === "queue" ? queues.has(line.name) : line.op !== "sent") deadLines += 2;
      apply(line);
    }
    if (deadLines > COMPACT_AFTER_DEAD_LINES) compact();
  };
  const sentLine = (queueUrl: string, entry: BatchEntry, id: string): Line => ({
    op: "sent",
    id,
    queue: queueNameOf(queueUrl),
    body: entry.MessageBody ?? "",
    group: entry.MessageGroupId,
    attributes: entry.MessageAttributes,
    visibleAt: now() + (entry.DelaySeconds ?? 0) * 1000,
  });
  const deletedLine = (handle: string | undefined): Line[] => {
    const id = handle === undefined ? undefined : idsByHandle.get(handle);
    if (id === undefined || handle === undefined) return [];
    idsByHandle.delete(handle);
    return [{ op: "deleted", id }];
  };

  sqs.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      const input = args.input as Record<string, unknown> & BatchEntry;
      const output = result.output as unknown as Record<string, unknown>;
      const queueUrl = String(input.QueueUrl ?? "");
      switch (context.commandName) {
        case "SendMessageCommand":
          record([sentLine(queueUrl, input, String(output.MessageId))]);
          break;
        case "SendMessageBatchCommand": {
          const entries = (input.Entries ?? []) as BatchEntry[];
          const ok = (output.Successful ?? []) as Array<{ Id?: string; MessageId?: string }>;
          record(
            ok.flatMap((s) => {
              const entry = entries.find((e) => e.Id === s.Id);
              return entry && s.MessageId ? [sentLine(queueUrl, entry, s.MessageId)] : [];
            }),
          );
          break;
        }
        case "ReceiveMessageCommand":
          for (const m of (output.Messages ?? []) as Array<{ ReceiptHandle?: string; MessageId?: string }>)
            if (m.ReceiptHandle && m.MessageId) idsByHandle.set(m.ReceiptHandle, m.MessageId);
          // Handles never deleted with (peeks, copies hidden again) are forgotten, oldest first.
          for (const handle of idsByHandle.keys()) {
            if (idsByHandle.size <= MAX_HANDLES) break;
            idsByHandle.delete(handle);
          }
          break;
        case "DeleteMessageCommand":
          record(deletedLine(input.ReceiptHandle));
          break;
        case "DeleteMessageBatchCommand": {
          const entries = (input.Entries ?? []) as BatchEntry[];
          const ok = (output.Successful ?? []) as Array<{ Id?: string }>;
          record(ok.flatMap((s) => deletedLine(entries.find((e) => e.Id === s.Id)?.ReceiptHandle)));
          break;
        }
        case "CreateQueueCommand": {
          const name = String(input.QueueName);
          record([{ op: "queue", name, input: args.input as CreateQueueCommandInput }]);
          break;
        }
        case "DeleteQueueCommand":
        case "PurgeQueueCommand":
          record([{ op: "queue-deleted", name: queueNameOf(queueUrl) }]);
          if (context.commandName === "PurgeQueueCommand") {
            const created = queues.get(queueNameOf(queueUrl));
            if (created) record([{ op: "queue", name: queueNameOf(queueUrl), input: created }]);
          }
          break;
      }
      return result;
    },
    { step: "initialize", name: "jobschedSqsJournal", priority: "low" },
  );

  return {
    async restore() {
      // A restore killed before it sent everything left its journal as `.restoring`: both are read.
      const previous = `${path}.restoring`;
      for (const file of [previous, path]) {
        if (!existsSync(file)) continue;
        for (const text of readFileSync(file, "utf8").split("\n")) {
          if (text.trim() === "") continue;
          try {
            apply(JSON.parse(text) as Line);
          } catch {
            // A line the kill cut short: the last one, of a call that never answered.
          }
        }
      }
      const messages = [...live.values()];
      const made = [...queues.values()];
      live.clear();
      queues.clear();
      // Kept until every message is sent again (they are journaled anew as they go).
      if (existsSync(path)) renameSync(path, previous);
      writeFileSync(path, "");
      deadLines = 0;
      const urls = new Map<string, string>();
      for (const created of made) {
        const { QueueUrl } = await sqs.send(new CreateQueueCommand(created));
        if (QueueUrl) urls.set(String(created.QueueName), QueueUrl);
      }
      // The stack's own queues are made by the bootstrap, not through this client; a queue that
      // no longer exists (a prefix changed) takes its messages with it.
      const urlOf = async (name: string) => {
        if (!urls.has(name)) {
          const found = await sqs
            .send(new GetQueueUrlCommand({ QueueName: name }))
            .then((answer) => answer.QueueUrl)
            .catch(() => undefined);
          if (found) urls.set(name, found);
        }
        return urls.get(name);
      };
      let sent = 0;
      for (const message of messages) {
        const url = await urlOf(message.queue);
        if (!url) continue;
        const seconds = Math.ceil((message.visibleAt - now()) / 1000);
        await sqs.send(
          new SendMessageCommand({
            QueueUrl: url,
            MessageBody: message.body,
            MessageGroupId: message.group,
            MessageAttributes: message.attributes,
            DelaySeconds: Math.max(0, Math.min(MAX_DELAY_SECONDS, seconds)),
          }),
        );
        sent += 1;
      }
      rmSync(previous, { force: true });
      return sent;
    },
  };
}
