import type { RunResponse } from "@jobsched/contract";
import { describe, expect, it } from "vitest";
import { PAUSED_RUN_REASON } from "../../lambdas/core/run";
import { type Books, type JobState, keepBooks } from "../chaos/accounting";
import type { AcceptedJob, ChaosTenant, Fault, WorkerEvent } from "../chaos/chaos-events";

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
