import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InvokeCommand, LambdaClient } from "@aws-sdk/client-lambda";
import type { GetScheduleCommandOutput } from "@aws-sdk/client-scheduler";
import { mockClient } from "aws-sdk-client-mock";
import { afterEach, describe, expect, it } from "vitest";
import { convertSchedule } from "../../cli/import/eventbridge-schedule";
import { invokeFunction } from "../../lambdas/adapters/targets/aws-targets";
import { type LambdaLike, Targets } from "../../lambdas/adapters/targets/target-invoker";
import { AWS_TARGET_TIMEOUT_SECONDS, type RunEnvelope } from "../../lambdas/core/target";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { LocalFunctions } from "../../local/local-functions";
import { memoryDeps } from "../support/memory-ports";

/**
 * Issue 27, finding 5: a `lambda` target's `invocation`. `sync` waits for the function, at most
 * 15 s, and says so when a function runs longer; `async` is Lambda's Event invocation, as
 * EventBridge Scheduler invokes: accepted (202) is delivered. The importer sets `async`; the
 * local runtime's functions take both.
 */
const ARN = "arn:aws:lambda:eu-west-1:123456789012:function:reminders";
const ROLE = "arn:aws:iam::123456789012:role/jobsched-target-invoke";
/** A tenant named by its principal: its account holds ROLE (decision 0035). */
const TENANT = "arn:aws:iam::123456789012:role/t";
const envelope: RunEnvelope = {
  runKey: "j_1@2027-01-04T09:00:00Z",
  runId: "r_1",
  jobId: "j_1",
  fence: 1,
  scheduledFor: "2027-01-04T09:00:00Z",
  attempt: 1,
  payload: { to: "ana" },
};

const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

describe("an asynchronous Lambda target", () => {
  it("is invoked with InvocationType Event; accepted (202) is delivered, another answer is not", async () => {
    const client = new LambdaClient({ region: "eu-west-1" });
    const lambda = mockClient(client);
    lambda.on(InvokeCommand).resolvesOnce({ StatusCode: 202 }).resolvesOnce({ StatusCode: 200 });

    expect(await invokeFunction(client, ARN, envelope, 1_000, "async")).toEqual({ ok: true });
    expect(lambda.call(0).args[0].input).toMatchObject({ FunctionName: ARN, InvocationType: "Event" });
    const sent = (lambda.call(0).args[0].input as { Payload: Uint8Array }).Payload;
    expect(JSON.parse(Buffer.from(sent).toString())).toEqual(envelope);

    expect(await invokeFunction(client, ARN, envelope, 1_000, "async")).toMatchObject({
      ok: false,
      retryable: true,
      error: expect.stringMatching(/answered 200, not 202/),
    });
  });

  it("is what the dispatcher's targets ask for when the job says so (sync when it does not)", async () => {
    const seen: Array<string | undefined> = [];
    const fake: LambdaLike = {
      send: (async (command: InvokeCommand) => {
        seen.push(command.input.InvocationType);
        return { $metadata: {}, StatusCode: command.input.InvocationType === "Event" ? 202 : 200 };
      }) as LambdaLike["send"],
    };
    const targets = new Targets(
      memoryDeps(0).webhookSecrets,
      { lambda: () => fake, sqs: () => never() },
      { allowPrivate: false, ports: [443] },
      { namePattern: "jobsched-target-*" },
    );
    const context = { tenant: TENANT, timeoutMs: 1_000 };
    for (const invocation of ["async", "sync"] as const) {
      const target = { kind: "lambda", functionArn: ARN, roleArn: ROLE, invocation } as const;
      expect(await targets.deliver(target, envelope, context)).toEqual({ ok: true });
    }
    expect(seen).toEqual(["Event", "RequestResponse"]);
  });
});

describe("a synchronous Lambda target", () => {
  it("says clearly that a function that did not answer in time was cut off, and how to run longer ones", async () => {
    // A Lambda endpoint that takes the invoke and never answers: the function runs on.
    const server = createServer(() => undefined);
    servers.push(server);
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    const client = new LambdaClient({
      region: "eu-west-1",
      endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      credentials: { accessKeyId: "AKIDLOCAL", secretAccessKey: "local" },
      maxAttempts: 1,
    });
    const result = await invokeFunction(client, ARN, envelope, 300, "sync");
    expect(result).toEqual({
      ok: false,
      retryable: true,
      error:
        `invoke ${ARN}: no answer within 0.3 s (a synchronous invoke waits at most ` +
        `${AWS_TARGET_TIMEOUT_SECONDS} s; the function may still be running). For a function that ` +
        `runs longer, set the target's "invocation": "async"`,
    });
  });
});

describe("the invocation choice", () => {
  const caller = { tenant: TENANT, principal: TENANT };
  const runAt = new Date(3_600_000).toISOString();

  it("is sync unless asked otherwise, and a value other than sync or async is refused naming the field", async () => {
    const deps = memoryDeps(0);
    const base = { kind: "lambda", functionArn: ARN, roleArn: ROLE };
    const { jobId } = await createJob(deps, caller, { target: base, runAt });
    expect((await deps.jobs.getJob(jobId))?.target).toMatchObject({ invocation: "sync" });
    const async = await createJob(deps, caller, { target: { ...base, invocation: "async" }, runAt });
    expect((await deps.jobs.getJob(async.jobId))?.target).toMatchObject({ invocation: "async" });
    await expect(
      createJob(deps, caller, { target: { ...base, invocation: "later" }, runAt }),
    ).rejects.toMatchObject({ field: "target.invocation" });
  });

  it("is async for a function imported from EventBridge Scheduler, which invokes asynchronously", () => {
    const schedule: GetScheduleCommandOutput = {
      $metadata: {},
      Name: "reminders",
      ScheduleExpression: "rate(5 minutes)",
      FlexibleTimeWindow: { Mode: "OFF" },
      Target: { Arn: ARN, RoleArn: ROLE },
    };
    const conversion = convertSchedule(schedule, Date.parse("2027-01-04T09:00:00Z"));
    expect(conversion).toMatchObject({
      ok: true,
      body: { target: { kind: "lambda", functionArn: ARN, roleArn: ROLE, invocation: "async" } },
    });
  });
});

describe("the local runtime's functions", () => {
  it("answer an asynchronous invoke with 202 at once, run the handler after it, and retry a throw", async () => {
    const folder = mkdtempSync(join(tmpdir(), "jobsched-functions-"));
    const module = join(folder, "f.mjs");
    // Fails on its first call, succeeds on the second; tells the test each call.
    writeFileSync(
      module,
      "let calls = 0;\nexport async function handler(event) {\n  calls += 1;\n  globalThis.__calls?.(event, calls);\n  if (calls === 1) throw new Error('first call fails');\n  return 'done';\n}\n",
    );
    const errors: string[] = [];
    const functions = new LocalFunctions(new Map([[ARN, module]]), [0], (message) => errors.push(message));
    const calls: Array<{ event: unknown; call: number }> = [];
    let secondCall: () => void = () => undefined;
    const retried = new Promise<void>((resolve) => {
      secondCall = resolve;
    });
    (globalThis as { __calls?: (event: unknown, call: number) => void }).__calls = (event, call) => {
      calls.push({ event, call });
      if (call === 2) secondCall();
    };
    const answer = await functions.send(
      new InvokeCommand({
        FunctionName: ARN,
        InvocationType: "Event",
        Payload: Buffer.from(JSON.stringify(envelope)),
      }),
    );
    expect(answer.StatusCode).toBe(202);
    expect(calls).toEqual([]); // not run before the invoke's answer
    await retried;
    expect(calls).toEqual([
      { event: envelope, call: 1 },
      { event: envelope, call: 2 },
    ]);
    expect(errors).toEqual([
      `local function ${ARN} (asynchronous invocation) failed: first call fails; retrying in 0 s`,
    ]);
    // An unknown function is refused at the invoke, as Lambda refuses it, either way.
    await expect(
      functions.send(new InvokeCommand({ FunctionName: `${ARN}-x`, InvocationType: "Event", Payload: "{}" })),
    ).rejects.toMatchObject({ name: "ResourceNotFoundException" });
  });
});

function never(): never {
  throw new Error("not reached");
}
