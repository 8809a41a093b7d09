import { describe, expect, it } from "vitest";
import { InProcessTargetSlots } from "../../lambdas/adapters/targets/target-slots";
import {
  addressProblem,
  type DestinationRules,
  destinationProblem,
  webhookUrlProblem,
} from "../../lambdas/core/destination-rules";
import { ConflictError, NotFoundError, QuotaExceededError, ValidationError } from "../../lambdas/core/errors";
import { RunStatus } from "../../lambdas/core/run";
import {
  AWS_TARGET_TIMEOUT_SECONDS,
  concurrencyOf,
  DEFAULT_TARGET_CONCURRENCY,
  type DeliveryResult,
  isPushType,
  type RunEnvelope,
  type Target,
  type TargetInvoker,
  targetKeyOf,
  timeoutMsOf,
} from "../../lambdas/core/target";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { type DispatchDeps, dispatchRuns } from "../../lambdas/core/use-cases/dispatch-runs";
import { updateJob } from "../../lambdas/core/use-cases/update-job";
import {
  MIN_ROTATION_INTERVAL_MS,
  PREVIOUS_SECRET_GRACE_MS,
  rotateWebhookSecret,
  SIGNING_SECRETS_CACHE_MS,
  showWebhookSecret,
  signingSecretsOf,
} from "../../lambdas/core/use-cases/webhook-secrets";
import { knownRunsOf } from "../support/known-runs";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";
import { shownStatus } from "../support/shown-job";

/**
 * Push delivery's core (issue 17) on the in-memory ports and a fake clock: the destination
 * rules, webhook secrets, the rules a push job is created and changed by, and the dispatcher's
 * lease, hold, delivery and outcome.
 */
const NOW = Date.parse("2027-01-04T09:00:00Z");
const caller = { tenant: "t", principal: "arn:aws:iam::1:role/t" };
/** Tenant "t" keeps its target roles in this account, as TENANT_ACCOUNTS would list it (decision 0035). */
const ACCOUNT = "123456789012";
const ROLE = `arn:aws:iam::${ACCOUNT}:role/jobsched-target-r`;
const pushDeps = (settings: Parameters<typeof memoryDeps>[1] = {}) => ({
  ...memoryDeps(NOW, settings),
  tenantAccounts: { t: [ACCOUNT] },
});
const webhook: Target = {
  kind: "https",
  url: "https://hooks.example.com/a",
  timeoutSeconds: 10,
  concurrency: 2,
};

/** The rules in AWS (allowPrivateTargets 0, webhookPorts 443) and in the local runtime. */
const CLOUD: DestinationRules = { allowPrivate: false, ports: [443] };
const LOCAL: DestinationRules = { allowPrivate: true, ports: [443] };

/**
 * Issue 27, finding 10: forms of a loopback, private or special destination that create
 * accepted, and ports other than 443, each with the problem its answer must name.
 */
const REFUSED_FORMS: ReadonlyArray<readonly [url: string, problem: RegExp]> = [
  ["https://[::127.0.0.1]/", /::7f00:1 is an IPv4-compatible address/],
  ["https://[::8.8.8.8]/", /IPv4-compatible/],
  ["https://[::ffff:0:127.0.0.1]/", /IPv4-translated/],
  ["https://[::ffff:0:8.8.8.8]/", /IPv4-translated/],
  ["https://[2002:7f00:1::]/", /6to4/],
  ["https://[2002:808:808::1]/", /6to4/],
  ["https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", /Teredo/],
  ["https://[64:ff9b:1::a00:1]/", /NAT64/],
  ["https://[64:ff9b::8.8.8.8]/", /NAT64/],
  ["https://localhost./hook", /without a trailing dot \(localhost\.\)/],
  ["https://metadata.google.internal./computeMetadata/v1/", /trailing dot/],
  ["https://hooks.example.com./hook", /trailing dot/],
  ["https://hooks.example.com:8443/hook", /port 443, not 8443/],
  ["https://hooks.example.com:22/hook", /port 443, not 22/],
  ["https://8.8.8.8:6379/", /port 443, not 6379/],
];

describe("destination rules", () => {
  it("refuse private, loopback, link-local, metadata, reserved and embedded addresses in AWS", () => {
    for (const url of [
      "https://10.1.2.3/",
      "https://127.0.0.1/",
      "https://169.254.169.254/",
      "https://172.16.0.1/",
      "https://192.168.0.1/",
      "https://100.64.0.1/",
      "https://0.0.0.0/",
      "https://224.0.0.1/",
      "https://[::1]/",
      "https://[::]/",
      "https://[fe80::1]/",
      "https://[fd00:ec2::254]/",
      "https://[::ffff:10.0.0.1]/",
      "https://[::ffff:a00:1]/",
    ]) {
      expect(webhookUrlProblem(url, CLOUD), url).toMatch(/loopback, private/);
    }
  });

  it("accept public https addresses and names; refuse plain http, local names, credentials and fragments", () => {
    for (const url of [
      "https://8.8.8.8/hook",
      "https://[2606:4700::1111]/",
      "https://hooks.example.com:443/x?y=1",
      "https://[::ffff:8.8.8.8]/",
    ]) {
      expect(webhookUrlProblem(url, CLOUD), url).toBeUndefined();
    }
    expect(webhookUrlProblem("http://hooks.example.com/", CLOUD)).toBe("must be an https:// URL");
    expect(webhookUrlProblem("https://localhost/", CLOUD)).toMatch(/public host/);
    expect(webhookUrlProblem("https://db.internal/", CLOUD)).toMatch(/public host/);
    expect(webhookUrlProblem("https://printer/", CLOUD)).toMatch(/public host/);
    expect(webhookUrlProblem("https://u:p@hooks.example.com/", CLOUD)).toMatch(/user name/);
    expect(webhookUrlProblem("https://hooks.example.com/#x", CLOUD)).toMatch(/fragment/);
    expect(webhookUrlProblem("not a url", CLOUD)).toBe("must be an absolute URL");
  });

  it("refuse every form issue 27 found accepted, at create and at update, naming target.url and the problem", async () => {
    const deps = memoryDeps(NOW, { allowPrivateTargets: 0 });
    await rotateWebhookSecret(deps, caller);
    const runAt = new Date(NOW + 3_600_000).toISOString();
    const { jobId } = await createJob(deps, caller, { target: webhook, runAt });
    for (const [url, problem] of REFUSED_FORMS) {
      const expected = { field: "target.url", message: expect.stringMatching(problem) };
      await expect(
        createJob(deps, caller, { target: { kind: "https", url }, runAt }),
        url,
      ).rejects.toMatchObject(expected);
      await expect(
        updateJob(deps, caller, jobId, { target: { kind: "https", url } }, undefined),
        url,
      ).rejects.toMatchObject(expected);
      expect(webhookUrlProblem(url, CLOUD), url).toMatch(problem);
    }
    // Nothing was made or changed.
    expect((await deps.jobs.getJob(jobId))?.target).toMatchObject({ url: webhook.url });
    expect((await deps.jobs.listJobs("t", {}, 100)).items).toHaveLength(1);
  });

  it("take other ports from the webhookPorts setting; the local runtime allows any port and loopback", async () => {
    const runAt = new Date(NOW + 3_600_000).toISOString();
    const wider = memoryDeps(NOW, { allowPrivateTargets: 0, webhookPorts: [443, 8443] });
    await rotateWebhookSecret(wider, caller);
    for (const url of ["https://hooks.example.com:8443/hook", "https://hooks.example.com/hook"]) {
      await expect(
        createJob(wider, caller, { target: { kind: "https", url }, runAt }),
        url,
      ).resolves.toMatchObject({
        created: true,
      });
    }
    await expect(
      createJob(wider, caller, { target: { kind: "https", url: "https://hooks.example.com:22/" }, runAt }),
    ).rejects.toMatchObject({
      field: "target.url",
      message: expect.stringMatching(/port 443 or 8443, not 22/),
    });
    const local = memoryDeps(NOW);
    await rotateWebhookSecret(local, caller);
    await expect(
      createJob(local, caller, { target: { kind: "https", url: "http://127.0.0.1:38411/hook" }, runAt }),
    ).resolves.toMatchObject({ created: true });
  });

  it("classify addresses by ipaddr.js's special-purpose table, IPv6 only in global unicast", () => {
    expect(addressProblem("2606:4700::1111")).toBeUndefined();
    expect(addressProblem("8.8.8.8")).toBeUndefined();
    expect(addressProblem("::ffff:8.8.8.8")).toBeUndefined();
    expect(addressProblem("::ffff:127.0.0.1")).toMatch(/loopback/);
    expect(addressProblem("169.254.169.254")).toMatch(/link-local/);
    expect(addressProblem("fd00:ec2::254")).toMatch(/unique local/);
    expect(addressProblem("2001:db8::1")).toMatch(/reserved or documentation/);
    expect(addressProblem("::7f00:1")).toMatch(/IPv4-compatible/);
    expect(addressProblem("4000::1")).toMatch(/outside IPv6 global unicast/);
    expect(addressProblem("hooks.example.com")).toBe("is not an IP address");
    expect(addressProblem("2001:2::1")).toBe("is a special-purpose address (benchmarking)");
  });

  it("check again before delivery the scheme, a literal address and the port, in AWS only", () => {
    expect(destinationProblem(new URL("http://127.0.0.1:38411/hook"), LOCAL)).toBeUndefined();
    expect(destinationProblem(new URL("http://hooks.example.com/"), CLOUD)).toBe("must be an https:// URL");
    expect(destinationProblem(new URL("https://[::127.0.0.1]/"), CLOUD)).toMatch(/IPv4-compatible/);
    expect(destinationProblem(new URL("https://hooks.example.com:8443/"), CLOUD)).toMatch(/not 8443/);
    // A name is judged by what it resolves to, at connect: not here.
    expect(destinationProblem(new URL("https://localhost./"), CLOUD)).toBeUndefined();
  });

  it("allow loopback and plain http only with the local setting", () => {
    expect(webhookUrlProblem("http://127.0.0.1:8791/hook", LOCAL)).toBeUndefined();
    expect(webhookUrlProblem("ftp://127.0.0.1/", LOCAL)).toBe("must be an https:// or http:// URL");
  });
});

describe("webhook secrets", () => {
  it("are created once, shown only then, rotated with a day's grace for the previous one", async () => {
    const deps = memoryDeps(NOW);
    await expect(showWebhookSecret(deps, caller)).rejects.toBeInstanceOf(NotFoundError);
    const first = await rotateWebhookSecret(deps, caller);
    expect(first.created).toBe(true);
    expect(first.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(await showWebhookSecret(deps, caller)).toEqual({ createdAt: "2027-01-04T09:00:00Z" });

    deps.clock.advance(60_000);
    const second = await rotateWebhookSecret(deps, caller);
    expect(second.created).toBe(false);
    expect(second.body.secret).not.toBe(first.body.secret);
    expect(second.body.previousValidUntil).toBe(
      new Date(NOW + 60_000 + PREVIOUS_SECRET_GRACE_MS).toISOString().replace(".000", ""),
    );
    const stored = await deps.webhookSecrets.get("t");
    const next = stored?.next as string;
    expect(next).toMatch(/^whsec_/);
    expect([first.body.secret, second.body.secret]).not.toContain(next);
    // The current secret, the next one (drawn now, shown at the next rotation), the previous.
    expect(signingSecretsOf(stored as NonNullable<typeof stored>, NOW + 120_000)).toEqual([
      second.body.secret,
      next,
      first.body.secret,
    ]);
    expect(
      signingSecretsOf(stored as NonNullable<typeof stored>, NOW + 60_000 + PREVIOUS_SECRET_GRACE_MS),
    ).toEqual([second.body.secret, next]);
    deps.clock.advance(PREVIOUS_SECRET_GRACE_MS);
    expect(await showWebhookSecret(deps, caller)).not.toHaveProperty("previousValidUntil");
  });

  it("make current at each rotation the secret every delivery was already signed with besides the current one", async () => {
    const deps = memoryDeps(NOW);
    const first = await rotateWebhookSecret(deps, caller);
    const before = await deps.webhookSecrets.get("t");
    expect(before?.current).toBe(first.body.secret);
    expect(signingSecretsOf(before as NonNullable<typeof before>, NOW)).toEqual([
      first.body.secret,
      before?.next,
    ]);
    deps.clock.advance(MIN_ROTATION_INTERVAL_MS);
    const second = await rotateWebhookSecret(deps, caller);
    expect(second.body.secret).toBe(before?.next);
  });

  it("are rotated at most once a minute: a rotation sooner is 429 with Retry-After and changes nothing", async () => {
    // Dispatchers keep a copy for up to 30 s, and the previous rotation's write may end up to
    // the API's 29 s timeout after its clock was read: a minute covers both.
    expect(MIN_ROTATION_INTERVAL_MS).toBe(60_000);
    expect(SIGNING_SECRETS_CACHE_MS).toBeLessThan(MIN_ROTATION_INTERVAL_MS);
    const deps = memoryDeps(NOW);
    await rotateWebhookSecret(deps, caller);
    deps.clock.advance(45_000);
    const before = await deps.webhookSecrets.get("t");
    const refused = rotateWebhookSecret(deps, caller);
    await expect(refused).rejects.toBeInstanceOf(QuotaExceededError);
    await expect(refused).rejects.toMatchObject({
      retryAfterSeconds: 15,
      message: expect.stringContaining("rotate again after 2027-01-04T09:01:00Z"),
    });
    expect(await deps.webhookSecrets.get("t")).toEqual(before);
    deps.clock.advance(15_000);
    await expect(rotateWebhookSecret(deps, caller)).resolves.toMatchObject({ created: false });
  });

  it("refuse a rotation that another one overtook (409)", async () => {
    const deps = memoryDeps(NOW);
    const store = deps.webhookSecrets;
    const racing: MemoryDeps = {
      ...deps,
      webhookSecrets: { get: store.get.bind(store), put: async () => false },
    };
    await expect(rotateWebhookSecret(racing, caller)).rejects.toBeInstanceOf(ConflictError);
  });
});

describe("creating and changing a push job", () => {
  it("takes the type from the target's kind; refuses a type beside a target, and neither", async () => {
    const deps = memoryDeps(NOW);
    await rotateWebhookSecret(deps, caller);
    const runAt = new Date(NOW + 3_600_000).toISOString();
    const { jobId } = await createJob(deps, caller, { target: webhook, runAt });
    expect((await deps.jobs.getJob(jobId))?.type).toBe("@https");
    await expect(createJob(deps, caller, { type: "x", target: webhook, runAt })).rejects.toMatchObject({
      field: "type",
    });
    await expect(createJob(deps, caller, { runAt })).rejects.toMatchObject({ field: "type" });
  });

  it("needs the tenant's webhook secret before an https target (409), not before a lambda one", async () => {
    const deps = pushDeps();
    const runAt = new Date(NOW + 3_600_000).toISOString();
    await expect(createJob(deps, caller, { target: webhook, runAt })).rejects.toBeInstanceOf(ConflictError);
    const lambda = {
      kind: "lambda",
      functionArn: "arn:aws:lambda:us-east-1:123456789012:function:f:live",
      roleArn: ROLE,
    };
    await expect(createJob(deps, caller, { target: lambda, runAt })).resolves.toMatchObject({
      created: true,
    });
  });

  it("holds queue URLs to SQS's in AWS, and lets the local runtime use its emulator's", async () => {
    const runAt = new Date(NOW + 3_600_000).toISOString();
    const sqs = (queueUrl: string) => ({
      kind: "sqs",
      queueUrl,
      roleArn: ROLE,
    });
    const cloud = pushDeps({ allowPrivateTargets: 0 });
    await expect(
      createJob(cloud, caller, {
        target: sqs("https://sqs.eu-west-1.amazonaws.com/123456789012/q.fifo"),
        runAt,
      }),
    ).resolves.toMatchObject({ created: true });
    await expect(
      createJob(cloud, caller, { target: sqs("http://127.0.0.1:9324/000000000000/q"), runAt }),
    ).rejects.toMatchObject({ field: "target.queueUrl" });
    await expect(
      createJob(cloud, caller, { target: { kind: "https", url: "https://10.0.0.1/" }, runAt }),
    ).rejects.toMatchObject({ field: "target.url" });
    const local = pushDeps();
    await expect(
      createJob(local, caller, { target: sqs("http://sqs.us-east-1.localhost:9324/000000000000/q"), runAt }),
    ).resolves.toMatchObject({ created: true });
    await expect(
      createJob(local, caller, { target: sqs("http://127.0.0.1:9324/no-account"), runAt }),
    ).rejects.toBeInstanceOf(ValidationError);
  });

  it("changes the destination in place, never the kind; a worker job cannot become a push job", async () => {
    const deps = memoryDeps(NOW);
    await rotateWebhookSecret(deps, caller);
    const runAt = new Date(NOW + 3_600_000).toISOString();
    const { jobId } = await createJob(deps, caller, { target: webhook, runAt });
    const updated = await updateJob(
      deps,
      caller,
      jobId,
      { target: { kind: "https", url: "https://hooks.example.com/b" } },
      undefined,
    );
    expect(updated.changed).toEqual(["target"]);
    expect((await deps.jobs.getJob(jobId))?.target).toMatchObject({ url: "https://hooks.example.com/b" });
    await expect(
      updateJob(
        deps,
        caller,
        jobId,
        { target: { kind: "sqs", queueUrl: "http://q", roleArn: ROLE } },
        undefined,
      ),
    ).rejects.toMatchObject({ field: "target.kind" });
    const worker = await createJob(deps, caller, { type: "x", runAt });
    await expect(updateJob(deps, caller, worker.jobId, { target: webhook }, undefined)).rejects.toMatchObject(
      {
        field: "target",
      },
    );
  });
});

/** A target that answers what a test says, and records what it was sent and when. */
class FakeTargets implements TargetInvoker {
  readonly calls: Array<{ envelope: RunEnvelope; at: number; timeoutMs: number }> = [];
  constructor(
    private readonly clock: { now(): number },
    private readonly answer: (envelope: RunEnvelope) => Promise<DeliveryResult> = async () => ({ ok: true }),
  ) {}
  async deliver(_target: Target, envelope: RunEnvelope, context: { tenant: string; timeoutMs: number }) {
    this.calls.push({ envelope, at: this.clock.now(), timeoutMs: context.timeoutMs });
    return this.answer(envelope);
  }
}

function dispatchDeps(
  deps: MemoryDeps,
  targets: TargetInvoker,
  slots = new InProcessTargetSlots(),
): DispatchDeps {
  return {
    ...deps,
    targets,
    targetSlots: slots,
    // The fake clock moves on as the dispatcher waits.
    sleep: async (ms) => deps.clock.advance(ms),
  };
}

/** A push job due `inMs` from now, its run created and its message received. */
async function pushRun(deps: MemoryDeps, inMs = 0, extra: Record<string, unknown> = {}) {
  if (!(await deps.webhookSecrets.get("t"))) await rotateWebhookSecret(deps, caller);
  const { jobId } = await createJob(deps, caller, {
    target: webhook,
    runAt: new Date(deps.clock.now() + inMs).toISOString(),
    ...extra,
  });
  deps.queue.deliverAll();
  return { jobId, received: deps.queue.ready.splice(0) };
}

describe("the dispatcher", () => {
  it("leases a due run, holds it until its second, delivers its envelope and records it succeeded", async () => {
    const deps = memoryDeps(NOW);
    const { jobId, received } = await pushRun(deps, 1_500, { payload: { hello: 1 } });
    const targets = new FakeTargets(deps.clock);
    const summary = await dispatchRuns(dispatchDeps(deps, targets), received, 60);
    expect(summary).toMatchObject({ leased: 1, succeeded: 1, failed: 0 });
    expect(targets.calls).toHaveLength(1);
    expect(targets.calls[0]?.at).toBe(NOW + 1_500);
    expect(targets.calls[0]?.envelope).toMatchObject({
      runKey: `${jobId}@2027-01-04T09:00:01.500Z`,
      fence: 1,
      attempt: 1,
      payload: { hello: 1 },
    });
    expect(targets.calls[0]?.timeoutMs).toBe(10_000);
    const run = (await deps.runs.listRecentRuns(jobId, 1))[0];
    expect(run).toMatchObject({ status: RunStatus.Succeeded, workerId: "jobsched-dispatcher" });
    expect(await shownStatus(deps, jobId)).toBe("completed");
    expect(deps.queue.deleted).toEqual([received[0]?.receiptHandle]);
  });

  it("retries a retryable failure no sooner than its Retry-After; dead-letters a final one at once", async () => {
    const deps = memoryDeps(NOW);
    const first = await pushRun(deps, 0, { retry: { base: 1, cap: 600 } });
    const later = new FakeTargets(deps.clock, async () => ({
      ok: false,
      retryable: true,
      error: "endpoint answered 503",
      retryAfterSeconds: 120,
    }));
    await dispatchRuns(dispatchDeps(deps, later), first.received, 60);
    const retried = (await deps.runs.listRecentRuns(first.jobId, 1))[0];
    expect(retried?.status).toBe(RunStatus.Pending);
    expect(retried?.retryAt).toBeGreaterThanOrEqual(deps.clock.now() + 120_000 - 5_000);
    // The retry's message goes to the push queue with a push run's short lead.
    expect(deps.queue.sent.at(-1)?.message.type).toBe("@https");

    const second = await pushRun(deps);
    const refused = new FakeTargets(deps.clock, async () => ({
      ok: false,
      retryable: false,
      error: "endpoint answered 400",
    }));
    await dispatchRuns(dispatchDeps(deps, refused), second.received, 60);
    expect((await deps.runs.listRecentRuns(second.jobId, 1))[0]).toMatchObject({
      status: RunStatus.DeadLettered,
      attempt: 1,
      error: "endpoint answered 400",
    });
  });

  it("counts a thrown delivery as a retryable failure", async () => {
    const deps = memoryDeps(NOW);
    const { jobId, received } = await pushRun(deps);
    const throwing = new FakeTargets(deps.clock, async () => {
      throw new Error("socket hang up");
    });
    expect(await dispatchRuns(dispatchDeps(deps, throwing), received, 60)).toMatchObject({
      leased: 1,
      succeeded: 0,
      failed: 1,
    });
    expect((await deps.runs.listRecentRuns(jobId, 1))[0]).toMatchObject({
      status: RunStatus.Pending,
      error: "delivery failed: Error: socket hang up",
    });
  });

  it("sends a run back, unleased, while its target's deliveries fill its concurrency", async () => {
    const deps = memoryDeps(NOW);
    const { jobId, received } = await pushRun(deps);
    const slots = new InProcessTargetSlots();
    const key = `t https ${new URL(webhook.url).origin}`;
    expect(await slots.acquire(key, 2, 0)).toBe(true);
    expect(await slots.acquire(key, 2, 0)).toBe(true);
    const targets = new FakeTargets(deps.clock);
    expect(await dispatchRuns(dispatchDeps(deps, targets, slots), received, 60)).toMatchObject({
      leased: 0,
      succeeded: 0,
      failed: 0,
    });
    expect(targets.calls).toEqual([]);
    // Not leased: a made run's item is written by its lease (decision 0051), and none was, so no
    // fence was raised. Its message goes back for a second, still carrying the run pending.
    expect(deps.runs.runs.size).toBe(0);
    expect(deps.queue.extended).toEqual([{ receiptHandle: received[0]?.receiptHandle, seconds: 1 }]);
    deps.queue.ready.push(...received);
    expect(knownRunsOf(deps, jobId)).toMatchObject([{ status: RunStatus.Pending, fence: 0 }]);
  });

  it("gives a run back, its attempt not counted, when its target stays full until its lease runs short", async () => {
    const deps = memoryDeps(NOW);
    const { jobId, received } = await pushRun(deps, 0, { leaseSeconds: 5 });
    // Free at the lease step, full at the delivery (another delivery took the last slots).
    const slots = new InProcessTargetSlots();
    const full: InProcessTargetSlots = Object.assign(Object.create(slots), {
      acquire: async () => false,
    });
    await dispatchRuns(dispatchDeps(deps, new FakeTargets(deps.clock), full), received, 60);
    // Not delivered, so not a failed attempt (test/unit/dispatch-deadline.test.ts).
    expect((await deps.runs.listRecentRuns(jobId, 1))[0]).toMatchObject({
      status: RunStatus.Pending,
      attempt: 0,
      error: undefined,
    });
  });

  it("records nothing when its lease was taken from it meanwhile (a revoked or lapsed lease)", async () => {
    const deps = memoryDeps(NOW);
    const { jobId, received } = await pushRun(deps);
    const revoking = new FakeTargets(deps.clock, async () => {
      // Its lease lapsed and another dispatcher took the run over, one fence up.
      const run = await deps.runs.getRun(jobId, NOW);
      deps.runs.runs.set(`${jobId}@${NOW}`, { ...(run as NonNullable<typeof run>), fence: 2 });
      return { ok: true };
    });
    expect(await dispatchRuns(dispatchDeps(deps, revoking), received, 60)).toMatchObject({ succeeded: 1 });
    expect((await deps.runs.listRecentRuns(jobId, 1))[0]?.status).not.toBe(RunStatus.Succeeded);
  });

  it("dead-letters a push-typed run whose job has no target", async () => {
    const deps = memoryDeps(NOW);
    const { jobId, received } = await pushRun(deps);
    const job = await deps.jobs.getJob(jobId);
    deps.jobs.jobs.set(jobId, { ...(job as NonNullable<typeof job>), target: undefined });
    await dispatchRuns(dispatchDeps(deps, new FakeTargets(deps.clock)), received, 60);
    expect((await deps.runs.listRecentRuns(jobId, 1))[0]).toMatchObject({
      status: RunStatus.DeadLettered,
      error: "the job has no target to deliver to",
    });
  });
});

describe("the dispatcher's edges", () => {
  it("gives Lambda and SQS targets the SDK's timeout and the default concurrency, keyed by ARN and URL", async () => {
    const lambda: Target = {
      kind: "lambda",
      functionArn: "arn:aws:lambda:us-east-1:123456789012:function:f",
      roleArn: ROLE,
      invocation: "sync",
    };
    const sqs: Target = {
      kind: "sqs",
      queueUrl: "https://sqs.us-east-1.amazonaws.com/123456789012/q",
      roleArn: "r",
    };
    expect([targetKeyOf("t", lambda), targetKeyOf("t", sqs), targetKeyOf("t", webhook)]).toEqual([
      "t lambda arn:aws:lambda:us-east-1:123456789012:function:f",
      "t sqs https://sqs.us-east-1.amazonaws.com/123456789012/q",
      "t https https://hooks.example.com",
    ]);
    expect([timeoutMsOf(lambda), timeoutMsOf(sqs), timeoutMsOf(webhook)]).toEqual([
      AWS_TARGET_TIMEOUT_SECONDS * 1000,
      AWS_TARGET_TIMEOUT_SECONDS * 1000,
      10_000,
    ]);
    expect([concurrencyOf(lambda), concurrencyOf(sqs), concurrencyOf(webhook)]).toEqual([
      DEFAULT_TARGET_CONCURRENCY,
      DEFAULT_TARGET_CONCURRENCY,
      2,
    ]);
    expect(isPushType("@lambda")).toBe(true);
    expect(isPushType("send-invoice")).toBe(false);

    const deps = pushDeps();
    const { jobId } = await createJob(deps, caller, { target: lambda, runAt: new Date(NOW).toISOString() });
    deps.queue.deliverAll();
    const targets = new FakeTargets(deps.clock);
    await dispatchRuns(dispatchDeps(deps, targets), deps.queue.ready.splice(0), 60);
    expect(targets.calls[0]?.timeoutMs).toBe(AWS_TARGET_TIMEOUT_SECONDS * 1000);
    expect((await deps.runs.listRecentRuns(jobId, 1))[0]?.status).toBe(RunStatus.Succeeded);
  });

  it("warns when the batch's messages could not be deleted, and counts a run whose outcome it could not write", async () => {
    const deps = memoryDeps(NOW);
    const { received } = await pushRun(deps);
    const failing: MemoryDeps = Object.assign(Object.create(deps), deps, {
      queue: Object.assign(Object.create(deps.queue), { deleteBatch: async (handles: string[]) => handles }),
    });
    await dispatchRuns(dispatchDeps(failing, new FakeTargets(deps.clock)), received, 60);
    expect(deps.warnings).toContain("could not delete some pushed runs' messages");

    const second = await pushRun(deps);
    const broken: MemoryDeps = Object.assign(Object.create(deps), deps, {
      runs: Object.assign(Object.create(deps.runs), {
        finishRun: async () => {
          throw new Error("DynamoDB is down");
        },
      }),
    });
    // That run's alone (test/unit/dispatch-batch.test.ts): its message is kept, not deleted.
    expect(
      await dispatchRuns(dispatchDeps(broken, new FakeTargets(deps.clock)), second.received, 60),
    ).toMatchObject({ leased: 1, unrecorded: 1 });
    expect(deps.queue.deleted).not.toContain(second.received[0]?.receiptHandle);
  });
});

describe("target slots", () => {
  it("hand a freed slot to the first waiter, time a waiter out, and tell when none waits", async () => {
    const slots = new InProcessTargetSlots();
    expect(await slots.acquire("k", 1, 0)).toBe(true);
    expect(await slots.acquire("k", 1, 0)).toBe(false);
    await slots.quiet(5_000); // one in flight, none waiting: at once
    const first = slots.acquire("k", 1, 1_000);
    const second = slots.acquire("k", 1, 5_000);
    let quiet = false;
    const whenQuiet = slots.quiet(5_000).then(() => {
      quiet = true;
    });
    slots.release("k");
    expect(await first).toBe(true);
    expect(slots.inFlight("k")).toBe(1);
    await Promise.resolve();
    expect(quiet).toBe(false); // the second still waits
    slots.release("k");
    expect(await second).toBe(true);
    await whenQuiet;
    expect(quiet).toBe(true);
    expect(await slots.acquire("k", 1, 10)).toBe(false); // timed out waiting
    slots.release("k");
    expect(slots.inFlight("k")).toBe(0);
  });
});
