import type { RunResponse } from "@jobsched/contract";
import { describe, expect, it } from "vitest";
import { PAUSED_RUN_REASON } from "../../lambdas/core/run";
import { type Books, type JobState, keepBooks } from "../chaos/accounting";
import type { AcceptedJob, ChaosTenant, Fault, JobSettings, WorkerEvent } from "../chaos/chaos-events";

/**
 * The crash loop's book keeping (test/chaos/accounting.ts, kind-rules.ts, fault-books.ts) fed
 * made-up histories: a balanced one passes every check, and each history made to break one
 * rule fails exactly the check for it. The crash loop asserts these same fields, so a check that
 * cannot fail here could not fail there either.
 */

const T0 = Date.parse("2026-12-01T10:00:00Z");
const served = new Map<string, readonly ChaosTenant[]>([
  ["w1", ["a"]],
  ["w2", ["a"]],
  ["dispatcher:a", ["a"]],
]);

/** A one-off job of `kind`, due `dueIn` ms after T0; its id's suffix is 20 characters. */
function oneOff(n: number, kind: string, extra: Partial<AcceptedJob> = {}): AcceptedJob {
  return {
    jobId: `j_${String(n).padStart(20, "0")}`,
    tenant: "a",
    schedule: "once",
    kind,
    runAt: T0 + n * 60_000,
    createdSentAt: T0 - 60_000,
    ...extra,
  };
}
const runIdOf = (job: AcceptedJob) => `r_${job.jobId.slice(2)}_${job.runAt}`;
/** An instant `ms` after the job's due time, as the API writes it. */
const iso = (job: AcceptedJob, ms: number) => new Date((job.runAt as number) + ms).toISOString();

function row(job: AcceptedJob, status: string, fence: number, error?: string): RunResponse {
  const at = job.runAt as number;
  return {
    runId: runIdOf(job),
    runKey: `${job.jobId}@${new Date(at).toISOString()}`,
    scheduledFor: new Date(at).toISOString(),
    status: status as RunResponse["status"],
    attempt: fence,
    fence,
    ...(error === undefined ? {} : { error }),
  };
}

const start = (job: AcceptedJob, fence: number, worker = "w1", delay = 10): WorkerEvent => ({
  e: "start",
  runId: runIdOf(job),
  fence,
  attempt: fence,
  worker,
  at: (job.runAt as number) + delay,
});
const done = (
  job: AcceptedJob,
  fence: number,
  result: "succeeded" | "failed",
  status: number | "lease-lost" | "unreachable" | "given-up" | "push-answered" = 200,
  worker = "w1",
  delay = 500,
): WorkerEvent => ({
  e: "done",
  runId: runIdOf(job),
  fence,
  worker,
  result,
  status,
  sentAt: (job.runAt as number) + delay - 10,
  at: (job.runAt as number) + delay,
});

interface History {
  jobs: AcceptedJob[];
  states: Map<string, JobState>;
  events: WorkerEvent[];
  faults: Fault[];
}

/** A history where every job of the mix ends as its kind says, with no fault. */
function balanced(): History {
  const ok = oneOff(1, "ok");
  const retry = oneOff(2, "retry-once");
  const permanent = oneOff(3, "permanent");
  const late = oneOff(4, "late-is-missed");
  const push = oneOff(5, "push-retry-once");
  const states = new Map<string, JobState>([
    [ok.jobId, { found: true, status: "completed", runs: [row(ok, "succeeded", 1)] }],
    [retry.jobId, { found: true, status: "completed", runs: [row(retry, "succeeded", 2)] }],
    [
      permanent.jobId,
      { found: true, status: "completed", runs: [row(permanent, "dead-lettered", 1, "chaos")] },
    ],
    [
      late.jobId,
      {
        found: true,
        status: "completed",
        runs: [
          { ...row(late, "missed", 0, "more than maxLateness (3 s) late"), finishedAt: iso(late, 5_000) },
        ],
      },
    ],
    [push.jobId, { found: true, status: "completed", runs: [row(push, "succeeded", 2)] }],
  ]);
  const events: WorkerEvent[] = [
    start(ok, 1),
    done(ok, 1, "succeeded"),
    start(retry, 1),
    done(retry, 1, "failed"),
    start(retry, 2, "w1", 3_000),
    done(retry, 2, "succeeded", 200, "w1", 3_500),
    start(permanent, 1),
    done(permanent, 1, "failed"),
    start(push, 1, "dispatcher:a"),
    done(push, 1, "failed", "push-answered", "dispatcher:a", 20),
    start(push, 2, "dispatcher:a", 3_000),
  ];
  return { jobs: [ok, retry, permanent, late, push], states, events, faults: [] };
}

const books = (h: History): Books => keepBooks(h.jobs, h.states, h.events, served, h.faults);

/** Every check the crash loop asserts empty, by name. */
function failing(b: Books): string[] {
  const lists: Record<string, readonly string[]> = {
    lost: b.lost,
    unaccounted: b.unaccounted,
    unexpected: b.unexpected,
    staleAccepted: b.staleAccepted,
    outcomeWithoutCompletion: b.outcomeWithoutCompletion,
    crossTenant: b.crossTenant,
    startedEarly: b.startedEarly,
    atMostOnceRepeated: b.atMostOnceRepeated,
    wrongFinalStatus: b.wrongFinalStatus,
    unexplainedDuplicates: b.unexplainedDuplicates,
    unexplainedDoubleSuccesses: b.unexplainedDoubleSuccesses,
    unexplainedPushRepeats: b.unexplainedPushRepeats,
  };
  const names = Object.entries(lists)
    .filter(([, list]) => list.length > 0)
    .map(([name]) => name);
  if (b.unacceptedExecutions > b.duplicateBound) names.push("duplicateBound");
  return names;
}

function setRuns(h: History, job: AcceptedJob, runs: RunResponse[]) {
  h.states.set(job.jobId, { found: true, status: "completed", runs });
}
/** Gives `job` these final runs and these worker events in place of the history's own. */
function retell(h: History, job: AcceptedJob, runs: RunResponse[], events: WorkerEvent[]) {
  setRuns(h, job, runs);
  h.events = [...h.events.filter((e) => e.runId !== runIdOf(job)), ...events];
}
const jobOf = (h: History, kind: string) => h.jobs.find((j) => j.kind === kind) as AcceptedJob;

describe("the crash loop's books", () => {
  it("balance on a history where every run ends as its kind says", () => {
    expect(failing(books(balanced()))).toEqual([]);
  });

  it("fail an ok job that ended dead-lettered after five successful executions (the issue's case)", () => {
    // Prepare
    const h = balanced();
    const ok = jobOf(h, "ok");
    setRuns(h, ok, [row(ok, "dead-lettered", 5, "chaos")]);
    h.events = h.events.filter((e) => e.runId !== runIdOf(ok));
    for (let fence = 1; fence <= 5; fence++) {
      h.events.push(
        start(ok, fence, "w1", fence * 1_000),
        done(ok, fence, "succeeded", 409, "w1", fence * 1_000 + 400),
      );
    }
    // Act
    const b = books(h);
    // Assess
    expect(failing(b)).toEqual([
      "wrongFinalStatus",
      "unexplainedDuplicates",
      "unexplainedDoubleSuccesses",
      "duplicateBound",
    ]);
    expect(b.unacceptedExecutions).toBe(5);
    expect(b.doubleSuccesses).toBe(1);
  });

  it("fail each kind's wrong ending: permanent succeeded, retry-once dead-lettered, missed for a pause there was not", () => {
    const cases: Array<[string, (h: History) => void]> = [
      [
        "permanent succeeded",
        (h) => setRuns(h, jobOf(h, "permanent"), [row(jobOf(h, "permanent"), "succeeded", 1)]),
      ],
      [
        "retry-once dead-lettered",
        (h) => setRuns(h, jobOf(h, "retry-once"), [row(jobOf(h, "retry-once"), "dead-lettered", 2, "x")]),
      ],
      [
        "ok missed as paused",
        (h) => setRuns(h, jobOf(h, "ok"), [row(jobOf(h, "ok"), "missed", 0, PAUSED_RUN_REASON)]),
      ],
      ["ok cancelled", (h) => setRuns(h, jobOf(h, "ok"), [row(jobOf(h, "ok"), "cancelled", 0, "cancelled")])],
      [
        "ok missed by the policy with no outage",
        (h) =>
          setRuns(h, jobOf(h, "ok"), [
            row(jobOf(h, "ok"), "missed", 0, "missed: the run for x stands for it (missedRuns: run-once)"),
          ]),
      ],
    ];
    for (const [name, breakIt] of cases) {
      const h = balanced();
      breakIt(h);
      h.events = h.events.filter(
        (e) => !(e.e === "start" && e.runId === runIdOf(jobOf(h, "ok")) && name.startsWith("ok")),
      );
      expect(books(h).wrongFinalStatus.length, name).toBeGreaterThan(0);
    }
  });

  it("allow a missed-as-paused run only inside its job's pause, and a cancelled run only for a cancelled job", () => {
    const h = balanced();
    const ok = jobOf(h, "ok");
    Object.assign(ok, {
      pausedAt: (ok.runAt as number) - 5_000,
      resumeAnsweredAt: (ok.runAt as number) + 60_000,
    });
    setRuns(h, ok, [row(ok, "missed", 0, PAUSED_RUN_REASON)]);
    h.events = h.events.filter((e) => e.runId !== runIdOf(ok));
    expect(failing(books(h))).toEqual([]);
    Object.assign(ok, { pausedAt: (ok.runAt as number) + 120_000 });
    expect(failing(books(h))).toEqual(["wrongFinalStatus"]);
  });

  it("allow a missed-as-paused run paused after its second only when a fault held it up before the pause", () => {
    // A runtime kill lost its lease's answer 5 s before it was due; the lease lapsed and the
    // job was paused 33 s after its second, before the run came back (a crash loop's history).
    const h = balanced();
    const ok = jobOf(h, "ok");
    const at = ok.runAt as number;
    Object.assign(ok, { pausedAt: at + 33_000, resumeAnsweredAt: at + 120_000 });
    setRuns(h, ok, [row(ok, "missed", 0, PAUSED_RUN_REASON)]);
    h.events = h.events.filter((e) => e.runId !== runIdOf(ok));
    expect(failing(books(h))).toEqual(["wrongFinalStatus"]); // no fault: the pause came too late
    h.faults.push({ kind: "runtime-kill", at: at - 5_000, backAt: at - 3_000 });
    expect(failing(books(h))).toEqual([]);
    // A fault after the pause explains nothing; nor a pause long after the run's second.
    h.faults = [{ kind: "worker-kill", worker: "w1", at: at + 40_000 }];
    expect(failing(books(h))).toEqual(["wrongFinalStatus"]);
    h.faults = [{ kind: "worker-stop", worker: "w1", at: at + 1_000, until: at + 9_000 }];
    expect(failing(books(h))).toEqual([]);
    Object.assign(ok, { pausedAt: at + 90_000 });
    expect(failing(books(h))).toEqual(["wrongFinalStatus"]);
  });

  it("fail a late-is-missed run that succeeded though its only lease came past its maxLateness", () => {
    // Prepare: leased once, 9 s after it was due (the lease step should have recorded it missed).
    const h = balanced();
    const late = jobOf(h, "late-is-missed");
    const leasedAt = (ms: number) => new Date((late.runAt as number) + ms).toISOString();
    setRuns(h, late, [{ ...row(late, "succeeded", 1), startedAt: leasedAt(9_000) }]);
    h.events.push(start(late, 1, "w1", 9_000), done(late, 1, "succeeded", 200, "w1", 9_300));
    expect(failing(books(h))).toEqual(["wrongFinalStatus"]);
    // Leased 1 s late: in time, even if its worker began it 9 s late (printed, not failed).
    setRuns(h, late, [{ ...row(late, "succeeded", 1), startedAt: leasedAt(1_000) }]);
    const b = books(h);
    expect(failing(b)).toEqual([]);
    expect(b.startedPastMaxLateness).toHaveLength(1);
    // A second lease (its first lapsed to a worker kill) is late by design.
    h.events = h.events.filter((e) => e.runId !== runIdOf(late));
    h.events.push(
      start(late, 1, "w1", 500),
      start(late, 2, "w2", 20_000),
      done(late, 2, "succeeded", 200, "w2", 20_300),
    );
    h.faults.push({ kind: "worker-kill", worker: "w1", at: (late.runAt as number) + 600 });
    setRuns(h, late, [{ ...row(late, "succeeded", 2), startedAt: leasedAt(20_000) }]);
    expect(failing(books(h))).toEqual([]);
  });

  it("explain a repeat by a worker stop over its execution, and fail the same repeat without it", () => {
    // Prepare: w1 runs the ok job, is stopped past its lease, w2 runs it again and succeeds.
    const h = balanced();
    const ok = jobOf(h, "ok");
    const at = ok.runAt as number;
    retell(
      h,
      ok,
      [row(ok, "succeeded", 2)],
      [
        start(ok, 1, "w1"),
        start(ok, 2, "w2", 6_000),
        done(ok, 2, "succeeded", 200, "w2", 6_400),
        done(ok, 1, "succeeded", 409, "w1", 12_000),
      ],
    );
    // Act, Assess: no fault, so neither the repeat nor the double success is explained.
    expect(failing(books(h))).toEqual([
      "unexplainedDuplicates",
      "unexplainedDoubleSuccesses",
      "duplicateBound",
    ]);
    h.faults.push({ kind: "worker-stop", worker: "w1", at: at + 100, until: at + 11_000 });
    const b = books(h);
    expect(failing(b)).toEqual([]);
    expect(b.explainedBy).toEqual({ "worker stop": 1 });
    // A stop of another worker explains nothing.
    h.faults = [{ kind: "worker-stop", worker: "w2", at: at + 100, until: at + 11_000 }];
    expect(failing(books(h))).toEqual(["unexplainedDuplicates", "unexplainedDoubleSuccesses"]);
  });

  it("explain an execution with no answer by its worker's kill, or a runtime kill over it, not by a kill before it", () => {
    const h = balanced();
    const ok = jobOf(h, "ok");
    const at = ok.runAt as number;
    retell(
      h,
      ok,
      [row(ok, "succeeded", 2)],
      [start(ok, 1, "w1"), start(ok, 2, "w2", 30_000), done(ok, 2, "succeeded", 200, "w2", 30_400)],
    );
    expect(failing(books(h))).toEqual(["unexplainedDuplicates", "duplicateBound"]);
    h.faults = [{ kind: "worker-kill", worker: "w1", at: at - 60_000 }];
    expect(failing(books(h))).toEqual(["unexplainedDuplicates", "duplicateBound"]);
    h.faults = [{ kind: "worker-kill", worker: "w1", at: at + 200 }];
    expect(failing(books(h))).toEqual([]);
    h.faults = [{ kind: "runtime-kill", at: at + 1_000, backAt: at + 4_000 }];
    expect(books(h).explainedBy).toEqual({ "runtime kill": 1 });
  });

  it("fail a run started again after its success was accepted", () => {
    const h = balanced();
    const ok = jobOf(h, "ok");
    setRuns(h, ok, [row(ok, "succeeded", 1)]);
    h.events.push(start(ok, 2, "w2", 5_000), done(ok, 2, "succeeded", 409, "w2", 5_400));
    // Even with a fault to explain the refused completion, the second lease itself is a bug.
    h.faults.push({
      kind: "worker-stop",
      worker: "w2",
      at: (ok.runAt as number) + 4_000,
      until: Number.MAX_SAFE_INTEGER,
    });
    expect(failing(books(h))).toEqual(["unexplainedDoubleSuccesses"]);
  });

  it("fail a push delivery made again with no failed answer or runtime kill before it", () => {
    const h = balanced();
    const push = jobOf(h, "push-retry-once");
    h.events = h.events.filter((e) => !(e.e === "done" && e.runId === runIdOf(push)));
    expect(failing(books(h))).toEqual(["unexplainedPushRepeats"]);
    h.faults.push({
      kind: "runtime-kill",
      at: (push.runAt as number) + 1_000,
      backAt: (push.runAt as number) + 2_000,
    });
    expect(failing(books(h))).toEqual([]);
  });

  it("fail an at-most-once run recorded lost with no fault, and an at-least-once run recorded lost at all", () => {
    const h = balanced();
    const once = oneOff(30, "at-most-once");
    h.jobs.push(once);
    const reason = "its lease lapsed without a completion";
    setRuns(h, once, [row(once, "lost", 1, reason)]);
    h.events.push(start(once, 1, "w1"));
    expect(failing(books(h))).toEqual(["wrongFinalStatus", "unexplainedDuplicates", "duplicateBound"]);
    h.faults.push({ kind: "worker-kill", worker: "w1", at: (once.runAt as number) + 2_000 });
    expect(failing(books(h))).toEqual([]);
    const ok = jobOf(h, "ok");
    setRuns(h, ok, [row(ok, "lost", 1, reason)]);
    expect(failing(books(h))).toContain("unexpected");
  });

  it("allow a slow-heartbeats run dead-lettered by lapsed leases only when a fault cut each of its executions", () => {
    const h = balanced();
    const slow = oneOff(31, "slow-heartbeats");
    h.jobs.push(slow);
    setRuns(h, slow, [row(slow, "dead-lettered", 2, "2 lease(s) lapsed without a completion")]);
    h.events.push(start(slow, 1, "w1", 10), start(slow, 2, "w2", 20_000));
    // The first execution's worker stopped over it; nothing cut the second.
    h.faults.push({
      kind: "worker-stop",
      worker: "w1",
      at: (slow.runAt as number) + 1_000,
      until: (slow.runAt as number) + 9_000,
    });
    expect(failing(books(h))).toContain("wrongFinalStatus");
    h.faults.push({ kind: "worker-kill", worker: "w2", at: (slow.runAt as number) + 21_000 });
    expect(failing(books(h))).not.toContain("wrongFinalStatus");
    // Dead-lettered for another reason (its handler failing) stays wrong for the kind.
    setRuns(h, slow, [row(slow, "dead-lettered", 2, "boom")]);
    expect(failing(books(h))).toContain("wrongFinalStatus");
  });

  it("fail a bound that the faults cannot cover: more refused executions than were in flight during one", () => {
    const h = balanced();
    const ok = jobOf(h, "ok");
    retell(
      h,
      ok,
      [row(ok, "succeeded", 3)],
      [
        start(ok, 1, "w1"),
        done(ok, 1, "succeeded", 409, "w1", 900),
        start(ok, 2, "w1", 20_000),
        done(ok, 2, "succeeded", 409, "w1", 20_900),
        start(ok, 3, "w1", 40_000),
        done(ok, 3, "succeeded", 200, "w1", 40_400),
      ],
    );
    // One stop covers only the first execution: the second repeat stays unexplained.
    h.faults.push({
      kind: "worker-stop",
      worker: "w1",
      at: (ok.runAt as number) + 100,
      until: (ok.runAt as number) + 800,
    });
    const b = books(h);
    expect(b.unacceptedExecutions).toBe(2);
    expect(b.unexplainedDuplicates).toHaveLength(1);
    expect(b.duplicateBound).toBe(1);
    expect(failing(b)).toContain("duplicateBound");
  });
  it("fail a one-off run missed by the missed-run policy, even beside an outage; allow a cron firing's", () => {
    const h = balanced();
    const ok = jobOf(h, "ok");
    const reason = "missed: the run for x stands for it (missedRuns: run-once)";
    h.events = h.events.filter((e) => e.runId !== runIdOf(ok));
    setRuns(h, ok, [row(ok, "missed", 0, reason)]);
    h.faults.push({
      kind: "runtime-kill",
      at: (ok.runAt as number) - 5_000,
      backAt: (ok.runAt as number) + 2_000,
    });
    expect(failing(books(h))).toEqual(["wrongFinalStatus"]);
    // The same firing of an every-minute job, beside the same outage: run-once's rule.
    const cron: AcceptedJob = { ...ok, schedule: "cron", runAt: undefined, endAt: ok.runAt as number };
    const b = books({ ...h, jobs: h.jobs.map((j) => (j === ok ? cron : j)) });
    expect(b.wrongFinalStatus.filter((p) => p.includes(ok.jobId) && p.includes("policy"))).toEqual([]);
  });

  it("fail a late-is-missed run recorded missed for lateness before it was late", () => {
    const h = balanced();
    const late = jobOf(h, "late-is-missed");
    const reason = "more than maxLateness (3 s) late when it could start";
    setRuns(h, late, [{ ...row(late, "missed", 0, reason), finishedAt: iso(late, 1_000) }]);
    expect(failing(books(h))).toEqual(["wrongFinalStatus"]);
    setRuns(h, late, [{ ...row(late, "missed", 0, reason), finishedAt: iso(late, 4_000) }]);
    expect(failing(books(h))).toEqual([]);
  });

  it("allow a double success only where a fault fell inside the refused execution, not for a cancel", () => {
    // Prepare: w1 succeeds but its completion is refused; w2 runs the run again and succeeds.
    const h = balanced();
    const ok = jobOf(h, "ok");
    const at = ok.runAt as number;
    retell(
      h,
      ok,
      [row(ok, "succeeded", 2)],
      [
        start(ok, 1, "w1"),
        done(ok, 1, "succeeded", 409, "w1", 900),
        start(ok, 2, "w2", 40_000),
        done(ok, 2, "succeeded", 200, "w2", 40_400),
      ],
    );
    // A cancel explains the refused completion, but not the run's second success.
    Object.assign(ok, { cancelSentAt: at + 500 });
    expect(books(h).unexplainedDoubleSuccesses).toHaveLength(1);
    // A runtime kill during the hand-over, 6 s before the start, explains the repeat, not the success.
    Object.assign(ok, { cancelSentAt: undefined });
    h.faults = [{ kind: "runtime-kill", at: at - 6_500, backAt: at - 6_000 }];
    const b = books(h);
    expect(b.unexplainedDuplicates).toEqual([]);
    expect(b.unexplainedDoubleSuccesses).toHaveLength(1);
    // The runtime down while the execution ran: both explained.
    h.faults = [{ kind: "runtime-kill", at: at + 300, backAt: at + 2_000 }];
    expect(failing(books(h))).toEqual([]);
  });
});

/** An every-minute job of `kind` firing at T0 + n h + 0, 1, 2... minutes (the last at its endAt). */
function cronJob(n: number, kind: string, settings: JobSettings[], firings = 3): AcceptedJob {
  const first = T0 + n * 3_600_000;
  return {
    jobId: `j_${String(n).padStart(20, "0")}`,
    tenant: "a",
    schedule: "cron",
    kind,
    createdSentAt: first - 30_000,
    endAt: first + (firings - 1) * 60_000,
    settings,
  };
}
const firstOf = (job: AcceptedJob) => job.createdSentAt + 30_000;
/** Firing k (from 0) of a cron job. */
const firing = (job: AcceptedJob, k: number) => firstOf(job) + k * 60_000;
const cronRunId = (job: AcceptedJob, k: number) => `r_${job.jobId.slice(2)}_${firing(job, k)}`;
const isoAt = (ms: number) => new Date(ms).toISOString();
/** The run row of firing k: finished `finishedIn` ms after it was due, leased `leasedIn` ms after. */
function cronRow(
  job: AcceptedJob,
  k: number,
  status: string,
  times: { fence?: number; leasedIn?: number; finishedIn?: number; error?: string } = {},
): RunResponse {
  const at = firing(job, k);
  return {
    runId: cronRunId(job, k),
    runKey: `${job.jobId}@${isoAt(at)}`,
    scheduledFor: isoAt(at),
    status: status as RunResponse["status"],
    attempt: times.fence ?? 0,
    fence: times.fence ?? 0,
    ...(times.leasedIn === undefined ? {} : { startedAt: isoAt(at + times.leasedIn) }),
    ...(times.finishedIn === undefined ? {} : { finishedAt: isoAt(at + times.finishedIn) }),
    ...(times.error === undefined ? {} : { error: times.error }),
  };
}
const cronStart = (
  job: AcceptedJob,
  k: number,
  fence: number,
  delay: number,
  worker = "w1",
): WorkerEvent => ({
  e: "start",
  runId: cronRunId(job, k),
  fence,
  attempt: fence,
  worker,
  at: firing(job, k) + delay,
});
const cronDone = (
  job: AcceptedJob,
  k: number,
  fence: number,
  delay: number,
  result: "succeeded" | "failed" = "succeeded",
  status: number | "lease-lost" = 200,
  worker = "w1",
): WorkerEvent => ({
  e: "done",
  runId: cronRunId(job, k),
  fence,
  worker,
  result,
  status,
  sentAt: firing(job, k) + delay - 10,
  at: firing(job, k) + delay,
});
/** Settings from the create on: `policy` and `delivery`, then each PATCH at `at` (answered 200 ms later). */
function settingsOf(
  first: Pick<JobSettings, "overlapPolicy" | "delivery">,
  ...patches: Array<Pick<JobSettings, "overlapPolicy" | "delivery"> & { at: number }>
): JobSettings[] {
  return [
    { ...first, sentAt: T0 - 60_000, answeredAt: T0 - 59_800 },
    ...patches.map(({ at, ...s }) => ({ ...s, sentAt: at, answeredAt: at + 200 })),
  ];
}
const skipReason = (holder: number, policy: "skip" | "buffer-one") =>
  policy === "skip"
    ? `the run of ${isoAt(holder)} was still unfinished (overlapPolicy skip)`
    : `the run of ${isoAt(holder)} was still unfinished and another run waits for it (overlapPolicy buffer-one)`;
const replacedReason = (by: number) =>
  `cancelled: the run of ${isoAt(by)} replaced it (overlapPolicy cancel-previous)`;

/** The balanced history plus one overlap job with these runs and events. */
function withJob(job: AcceptedJob, runs: RunResponse[], events: WorkerEvent[]): History {
  const h = balanced();
  h.jobs.push(job);
  h.states.set(job.jobId, { found: true, status: "completed", createdAt: isoAt(job.createdSentAt), runs });
  h.events.push(...events);
  return h;
}
const problemsOf = (h: History) => books(h).wrongFinalStatus;

describe("the crash loop's books on overlap policies, delivery PATCHes and AWS faults", () => {
  const allow = { overlapPolicy: "allow", delivery: "at-least-once" } as const;

  it("allow a skipped firing under skip only while the named earlier run was unfinished and the job was skip", () => {
    // Prepare: firing 0 runs 90 s, firing 1 is skipped as it comes due, firing 2 (the last) runs.
    const job = cronJob(40, "overlap", settingsOf({ overlapPolicy: "skip", delivery: "at-least-once" }));
    const history = (holderFinishedIn: number) =>
      withJob(
        job,
        [
          cronRow(job, 0, "succeeded", { fence: 1, leasedIn: 0, finishedIn: holderFinishedIn }),
          cronRow(job, 1, "skipped", { finishedIn: 100, error: skipReason(firing(job, 0), "skip") }),
          cronRow(job, 2, "succeeded", { fence: 1, leasedIn: 0, finishedIn: 2_000 }),
        ],
        [
          cronStart(job, 0, 1, 10),
          cronDone(job, 0, 1, holderFinishedIn),
          cronStart(job, 2, 1, 10),
          cronDone(job, 2, 1, 1_000),
        ],
      );
    // Act, Assess
    expect(failing(books(history(90_000)))).toEqual([]);
    // The run of firing 0 had finished 30 s in: nothing was left to skip for.
    expect(problemsOf(history(30_000))).toEqual([expect.stringContaining("had finished")]);
    // The job was allow then (a PATCH to skip answered 30 s after the skip).
    job.settings = settingsOf(allow, {
      overlapPolicy: "skip",
      delivery: "at-least-once",
      at: firing(job, 1) + 30_000,
    });
    expect(problemsOf(history(90_000))).toEqual([expect.stringContaining("the job was allow then")]);
    // A PATCH to skip answered just before: either policy may have decided.
    job.settings = settingsOf(allow, {
      overlapPolicy: "skip",
      delivery: "at-least-once",
      at: firing(job, 1) - 3_000,
    });
    expect(failing(books(history(90_000)))).toEqual([]);
  });

  it("fail a skipped last run, a run skipped against a later one, and a started run skipped", () => {
    const job = cronJob(41, "overlap", settingsOf({ overlapPolicy: "skip", delivery: "at-least-once" }));
    const h = withJob(
      job,
      [
        cronRow(job, 0, "succeeded", { fence: 1, leasedIn: 0, finishedIn: 1_000 }),
        cronRow(job, 1, "succeeded", { fence: 1, leasedIn: 0, finishedIn: 150_000 }),
        cronRow(job, 2, "skipped", { finishedIn: 100, error: skipReason(firing(job, 1), "skip") }),
      ],
      [
        cronStart(job, 0, 1, 10),
        cronDone(job, 0, 1, 1_000),
        cronStart(job, 1, 1, 10),
        cronDone(job, 1, 1, 150_000),
      ],
    );
    expect(problemsOf(h)).toEqual([expect.stringContaining("last run skipped")]);
    // Firing 0's message came 90 s late (re-sent by the repair pass after a kill) and found
    // firing 1 running: an older run waits for the newer one, never skips against it (0037).
    const late = (fence: number, holder: number) =>
      withJob(
        job,
        [
          cronRow(job, 0, "skipped", {
            fence,
            finishedIn: 90_000,
            error: skipReason(firing(job, holder), "skip"),
          }),
          cronRow(job, 1, "succeeded", { fence: 1, leasedIn: 0, finishedIn: 60_000 }),
          cronRow(job, 2, "succeeded", { fence: 1, leasedIn: 0, finishedIn: 1_000 }),
        ],
        [
          cronStart(job, 1, 1, 10),
          cronDone(job, 1, 1, 60_000),
          cronStart(job, 2, 1, 10),
          cronDone(job, 2, 1, 1_000),
        ],
      );
    expect(problemsOf(late(0, 1))).toEqual([expect.stringContaining("not an earlier run")]);
    // Firing 1, leased three times (a PATCH from allow to skip came while firing 0 still ran),
    // recorded skipped when its returning message found firing 0 unfinished: a started run.
    const started = withJob(
      job,
      [
        cronRow(job, 0, "succeeded", { fence: 1, leasedIn: 0, finishedIn: 150_000 }),
        cronRow(job, 1, "skipped", {
          fence: 3,
          finishedIn: 80_000,
          error: skipReason(firing(job, 0), "skip"),
        }),
        cronRow(job, 2, "succeeded", { fence: 1, leasedIn: 0, finishedIn: 1_000 }),
      ],
      [
        cronStart(job, 0, 1, 10),
        cronDone(job, 0, 1, 150_000),
        cronStart(job, 2, 1, 10),
        cronDone(job, 2, 1, 1_000),
      ],
    );
    expect(problemsOf(started)).toEqual([expect.stringContaining("skipped after it was leased 3 time(s)")]);
  });

  it("allow buffer-one's skip only while another run still waited (finding 1's duplicate takes no place)", () => {
    // Prepare: firing 0 runs 130 s; firing 1 waits for it (leased at 130 s); firing 2, due at
    // 120 s while firing 1 waits, is skipped; firing 3 (the last) runs after firing 1.
    const job = cronJob(
      42,
      "overlap",
      settingsOf({ overlapPolicy: "buffer-one", delivery: "at-least-once" }),
      4,
    );
    const history = (waiterLeasedIn: number) =>
      withJob(
        job,
        [
          cronRow(job, 0, "succeeded", { fence: 1, leasedIn: 0, finishedIn: 130_000 }),
          cronRow(job, 1, "succeeded", { fence: 1, leasedIn: waiterLeasedIn, finishedIn: 140_000 }),
          cronRow(job, 2, "skipped", { finishedIn: 100, error: skipReason(firing(job, 0), "buffer-one") }),
          cronRow(job, 3, "succeeded", { fence: 1, leasedIn: 20_000, finishedIn: 21_000 }),
        ],
        [
          cronStart(job, 0, 1, 10),
          cronDone(job, 0, 1, 130_000),
          cronStart(job, 1, 1, waiterLeasedIn + 10),
          cronDone(job, 1, 1, 140_000),
          cronStart(job, 3, 1, 20_010),
          cronDone(job, 3, 1, 21_000),
        ],
      );
    expect(failing(books(history(70_000)))).toEqual([]);
    // Firing 1 had been leased (it was not waiting) when firing 2 was skipped: no second waiter.
    expect(problemsOf(history(5_000))).toEqual([expect.stringContaining("no other run of the job waited")]);
  });

  it("allow buffer-one's 'waits to start first' skip only for an earlier run that had not finished, under buffer-one", () => {
    // Prepare: firing 0 is active (in the code's case, over but for its record); firing 1, the
    // run it wakes, goes first; firing 2 is skipped for it; firing 3 (the last) runs.
    const waitsFirst = (waiter: number) =>
      `the run of ${isoAt(waiter)} waits to start first (overlapPolicy buffer-one)`;
    const history = (policy: "buffer-one" | "skip", waiterIndex: number) => {
      const job = cronJob(44, "overlap", settingsOf({ overlapPolicy: policy, delivery: "at-least-once" }), 4);
      return withJob(
        job,
        [
          cronRow(job, 0, "succeeded", { fence: 1, leasedIn: 0, finishedIn: 130_000 }),
          cronRow(job, 1, "succeeded", { fence: 1, leasedIn: 70_000, finishedIn: 140_000 }),
          cronRow(job, 2, "skipped", { finishedIn: 100, error: waitsFirst(firing(job, waiterIndex)) }),
          cronRow(job, 3, "succeeded", { fence: 1, leasedIn: 20_000, finishedIn: 21_000 }),
        ],
        [
          cronStart(job, 0, 1, 10),
          cronDone(job, 0, 1, 130_000),
          cronStart(job, 1, 1, 70_010),
          cronDone(job, 1, 1, 140_000),
          cronStart(job, 3, 1, 20_010),
          cronDone(job, 3, 1, 21_000),
        ],
      );
    };
    expect(failing(books(history("buffer-one", 1)))).toEqual([]);
    expect(problemsOf(history("skip", 1))).toEqual([expect.stringContaining("skipped under buffer-one")]);
    expect(problemsOf(history("buffer-one", 3))).toEqual([
      expect.stringContaining("which is not an earlier run of the job"),
    ]);
  });

  it("allow a run cancelled as replaced only by a later, leased run under cancel-previous (finding 1 fails)", () => {
    // Prepare: firing 0 works 90 s; firing 1 revokes it as it is leased; its worker's heartbeat
    // gets 409 and its completion is never accepted.
    const job = cronJob(
      43,
      "overlap",
      settingsOf({ overlapPolicy: "cancel-previous", delivery: "at-least-once" }),
    );
    const revoked = (reason: string, byLeasedIn: number | undefined) =>
      withJob(
        job,
        [
          cronRow(job, 0, "cancelled", { fence: 2, leasedIn: 0, finishedIn: 60_100, error: reason }),
          cronRow(job, 1, "succeeded", {
            fence: 1,
            ...(byLeasedIn === undefined ? {} : { leasedIn: byLeasedIn }),
            finishedIn: 2_000,
          }),
          cronRow(job, 2, "succeeded", { fence: 1, leasedIn: 0, finishedIn: 2_000 }),
        ],
        [
          cronStart(job, 0, 1, 10),
          cronDone(job, 0, 1, 62_000, "failed", "lease-lost"),
          cronStart(job, 1, 1, 10),
          cronDone(job, 1, 1, 1_000),
          cronStart(job, 2, 1, 10),
          cronDone(job, 2, 1, 1_000),
        ],
      );
    const h = revoked(replacedReason(firing(job, 1)), 0);
    const b = books(h);
    expect(failing(b)).toEqual([]);
    expect(b.explainedBy).toEqual({ "revoked (cancel-previous)": 1 });
    // Finding 1: the revoked run's message came back and revoked the run that replaced it.
    const back = withJob(
      job,
      [
        cronRow(job, 0, "cancelled", {
          fence: 2,
          leasedIn: 0,
          finishedIn: 60_100,
          error: replacedReason(firing(job, 1)),
        }),
        cronRow(job, 1, "cancelled", {
          fence: 2,
          leasedIn: 0,
          finishedIn: 30_000,
          error: replacedReason(firing(job, 0)),
        }),
        cronRow(job, 2, "succeeded", { fence: 1, leasedIn: 0, finishedIn: 2_000 }),
      ],
      [
        cronStart(job, 0, 1, 10),
        cronDone(job, 0, 1, 62_000, "failed", "lease-lost"),
        cronStart(job, 1, 1, 10),
        cronDone(job, 1, 1, 31_000, "failed", "lease-lost"),
        cronStart(job, 2, 1, 10),
        cronDone(job, 2, 1, 1_000),
      ],
    );
    expect(problemsOf(back)).toEqual([expect.stringContaining("not a later run")]);
    // Revoked by a run that was never leased; or under another policy.
    expect(problemsOf(revoked(replacedReason(firing(job, 1)), undefined))).toEqual([
      expect.stringContaining("never leased"),
    ]);
    job.settings = settingsOf({ overlapPolicy: "skip", delivery: "at-least-once" });
    expect(problemsOf(revoked(replacedReason(firing(job, 1)), 0))).toEqual([
      expect.stringContaining("the job was skip then"),
    ]);
  });

  it("explain a refused completion by an injected AWS fault only on its run's requests, inside its window", () => {
    // Prepare: the ok job's first execution is refused (409), its second accepted.
    const h = balanced();
    const ok = jobOf(h, "ok");
    const at = ok.runAt as number;
    retell(
      h,
      ok,
      [row(ok, "succeeded", 2)],
      [
        start(ok, 1, "w1"),
        done(ok, 1, "failed", 409, "w1", 6_000),
        start(ok, 2, "w2", 20_000),
        done(ok, 2, "succeeded", 200, "w2", 20_400),
      ],
    );
    const fault = (runs: string[], jobs: string[], from: number): Fault => ({
      kind: "aws-fault",
      at: at + from,
      until: at + from + 2_000,
      service: "dynamodb",
      operation: "UpdateItem",
      fault: "timeout",
      error: "TimeoutError",
      applied: true,
      attempt: 1,
      runs,
      jobs,
    });
    // Act, Assess: nothing explains it.
    expect(failing(books(h))).toEqual(["unexplainedDuplicates", "duplicateBound"]);
    // A fault on another run's request (of another job) explains nothing.
    h.faults = [fault([runIdOf(jobOf(h, "permanent"))], [jobOf(h, "permanent").jobId], 1_000)];
    expect(failing(books(h))).toEqual(["unexplainedDuplicates", "duplicateBound"]);
    // Nor one on this run's request after its answer.
    h.faults = [fault([runIdOf(ok)], [ok.jobId], 10_000)];
    expect(failing(books(h))).toEqual(["unexplainedDuplicates", "duplicateBound"]);
    // A fault on its own request inside its window does.
    h.faults = [fault([runIdOf(ok)], [ok.jobId], 1_000)];
    const b = books(h);
    expect(failing(b)).toEqual([]);
    expect(b.explainedBy).toEqual({ "aws timeout": 1 });
    // So does one on a request about its job that named no run (a job read), but not one
    // naming another run of the same job.
    h.faults = [fault([], [ok.jobId], 1_000)];
    expect(failing(books(h))).toEqual([]);
    h.faults = [fault([`r_${ok.jobId.slice(2)}_${at + 60_000}`], [ok.jobId], 1_000)];
    expect(failing(books(h))).toEqual(["unexplainedDuplicates", "duplicateBound"]);
  });

  it("fail a run executed twice after a PATCH to at-most-once, not one retried before it", () => {
    // Prepare: every-minute job failing first attempts (retried 20 s later); firing 0 runs
    // twice under at-least-once; the job is PATCHed to at-most-once before firing 1.
    const patchAt = T0 + 44 * 3_600_000 + 30_000;
    const job = cronJob(
      44,
      "retry-patched",
      settingsOf(
        { overlapPolicy: "allow", delivery: "at-least-once" },
        { overlapPolicy: "allow", delivery: "at-most-once", at: patchAt },
      ),
    );
    const notRetried = "chaos: attempt 1 fails (at-most-once: not retried)";
    const runs = [
      cronRow(job, 0, "succeeded", { fence: 2, leasedIn: 20_000, finishedIn: 20_500 }),
      cronRow(job, 1, "dead-lettered", { fence: 1, leasedIn: 0, finishedIn: 500, error: notRetried }),
      cronRow(job, 2, "dead-lettered", { fence: 1, leasedIn: 0, finishedIn: 500, error: notRetried }),
    ];
    const events = [
      cronStart(job, 0, 1, 10),
      cronDone(job, 0, 1, 400, "failed"),
      cronStart(job, 0, 2, 20_010),
      cronDone(job, 0, 2, 20_400),
      cronStart(job, 1, 1, 10),
      cronDone(job, 1, 1, 400, "failed"),
      cronStart(job, 2, 1, 10),
      cronDone(job, 2, 1, 400, "failed"),
    ];
    expect(failing(books(withJob(job, runs, events)))).toEqual([]);
    // Firing 1 leased twice, both after the PATCH: at-most-once broken.
    const twice = [
      ...events.filter((e) => e.runId !== cronRunId(job, 1)),
      cronStart(job, 1, 1, 10),
      cronDone(job, 1, 1, 400, "failed"),
      cronStart(job, 1, 2, 20_010),
      cronDone(job, 1, 2, 20_400),
    ];
    const rows = [
      runs[0] as RunResponse,
      cronRow(job, 1, "succeeded", { fence: 2, leasedIn: 20_000, finishedIn: 20_500 }),
      runs[2] as RunResponse,
    ];
    expect(failing(books(withJob(job, rows, twice)))).toEqual(["atMostOnceRepeated"]);
    // Dead-lettered as at-most-once before the PATCH: wrong.
    const early = [
      cronRow(job, 0, "dead-lettered", { fence: 1, leasedIn: 0, finishedIn: 500, error: notRetried }),
      ...runs.slice(1),
    ];
    expect(
      problemsOf(
        withJob(
          job,
          early,
          events.filter((e) => !(e.runId === cronRunId(job, 0) && e.fence === 2)),
        ),
      ),
    ).toEqual([expect.stringContaining("at-least-once then")]);
  });

  it("allow a waiting retry dead-lettered by a PATCH to at-most-once only after that PATCH (finding 2's end)", () => {
    const patchAt = T0 + 46 * 3_600_000 + 10_000;
    const job = cronJob(
      46,
      "retry-patched",
      settingsOf(
        { overlapPolicy: "allow", delivery: "at-least-once" },
        { overlapPolicy: "allow", delivery: "at-most-once", at: patchAt },
      ),
    );
    const dropped = "its job became at-most-once while a retry waited: not run again";
    const notRetried = "chaos: attempt 1 fails (at-most-once: not retried)";
    const history = (droppedIn: number) =>
      withJob(
        job,
        [
          cronRow(job, 0, "dead-lettered", { fence: 1, leasedIn: 0, finishedIn: droppedIn, error: dropped }),
          cronRow(job, 1, "dead-lettered", { fence: 1, leasedIn: 0, finishedIn: 500, error: notRetried }),
          cronRow(job, 2, "dead-lettered", { fence: 1, leasedIn: 0, finishedIn: 500, error: notRetried }),
        ],
        [0, 1, 2].flatMap((k) => [cronStart(job, k, 1, 10), cronDone(job, k, 1, 400, "failed")]),
      );
    // Firing 0 failed at once, its retry was due at 20 s; the PATCH came at 10 s.
    expect(failing(books(history(20_000)))).toEqual([]);
    // Dead-lettered so a minute before the PATCH: the job was at-least-once then.
    const early = cronJob(47, "retry-patched", []);
    early.settings = settingsOf(
      { overlapPolicy: "allow", delivery: "at-least-once" },
      { overlapPolicy: "allow", delivery: "at-most-once", at: firing(early, 1) + 10_000 },
    );
    const h = withJob(
      early,
      [
        cronRow(early, 0, "dead-lettered", { fence: 1, leasedIn: 0, finishedIn: 20_000, error: dropped }),
        cronRow(early, 1, "succeeded", { fence: 2, leasedIn: 20_000, finishedIn: 20_500 }),
        cronRow(early, 2, "dead-lettered", { fence: 1, leasedIn: 0, finishedIn: 500, error: notRetried }),
      ],
      [
        cronStart(early, 0, 1, 10),
        cronDone(early, 0, 1, 400, "failed"),
        cronStart(early, 1, 1, 10),
        cronDone(early, 1, 1, 400, "failed"),
        cronStart(early, 1, 2, 20_010),
        cronDone(early, 1, 2, 20_400),
        cronStart(early, 2, 1, 10),
        cronDone(early, 2, 1, 400, "failed"),
      ],
    );
    expect(problemsOf(h)).toEqual([expect.stringContaining("at-least-once then")]);
  });

  it("allow lost only while the job was at-most-once, beside a fault on the run (an injected one too)", () => {
    const patchAt = T0 + 45 * 3_600_000 + 90_000;
    const job = cronJob(
      45,
      "overlap",
      settingsOf(allow, { overlapPolicy: "allow", delivery: "at-most-once", at: patchAt }),
    );
    const lostReason = "its lease lapsed without a completion";
    const runs = (k: number) =>
      [0, 1, 2].map((i) =>
        i === k
          ? cronRow(job, i, "lost", { fence: 1, leasedIn: 0, finishedIn: 30_000, error: lostReason })
          : cronRow(job, i, "succeeded", { fence: 1, leasedIn: 0, finishedIn: 1_000 }),
      );
    const events = (k: number) =>
      [0, 1, 2].flatMap((i) =>
        i === k ? [cronStart(job, i, 1, 10)] : [cronStart(job, i, 1, 10), cronDone(job, i, 1, 1_000)],
      );
    const heartbeatFault = (k: number): Fault => ({
      kind: "aws-fault",
      at: firing(job, k) + 4_000,
      until: firing(job, k) + 6_000,
      service: "dynamodb",
      operation: "UpdateItem",
      fault: "timeout",
      error: "TimeoutError",
      applied: false,
      attempt: 1,
      runs: [cronRunId(job, k)],
      jobs: [job.jobId],
    });
    // Firing 2 (after the PATCH) lost, a heartbeat of it held up by a timeout: explained.
    const h = withJob(job, runs(2), events(2));
    h.faults = [heartbeatFault(2)];
    expect(failing(books(h))).toEqual([]);
    // With no fault: not.
    h.faults = [];
    expect(failing(books(h))).toEqual(["wrongFinalStatus", "unexplainedDuplicates", "duplicateBound"]);
    // Firing 0, before the PATCH, lost beside the same kind of fault: the job was at-least-once.
    const early = withJob(job, runs(0), events(0));
    early.faults = [heartbeatFault(0)];
    expect(failing(books(early))).toEqual(["unexpected", "wrongFinalStatus"]);
  });

  it("explain a push delivery made again by a failed request about its run between the two", () => {
    const h = balanced();
    const push = jobOf(h, "push-retry-once");
    h.events = h.events.filter((e) => !(e.e === "done" && e.runId === runIdOf(push)));
    expect(failing(books(h))).toEqual(["unexplainedPushRepeats"]);
    h.faults.push({
      kind: "aws-fault",
      at: (push.runAt as number) + 100,
      until: (push.runAt as number) + 100,
      service: "sqs",
      operation: "DeleteMessage",
      fault: "throttle",
      error: "RequestThrottled",
      applied: false,
      attempt: 1,
      runs: [runIdOf(push)],
      jobs: [push.jobId],
    });
    expect(failing(books(h))).toEqual([]);
  });
});
