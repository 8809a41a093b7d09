import { describe, expect, it } from "vitest";
import { laneListenPolicy, SESSION_POLICY_MAX_CHARS } from "../../lambdas/adapters/sqs/lane-listen-policy";
import { FixedClock } from "../../lambdas/core/clock";
import { ValidationError } from "../../lambdas/core/errors";
import type { LaneListening, ListenAccess } from "../../lambdas/core/lane-listening-ports";
import { type Admission, laneKeyOf, type ReceiveRequest } from "../../lambdas/core/ports";
import {
  grantLaneListening,
  LISTEN_MAX_LANES,
  PEEK_VISIBILITY_SECONDS,
} from "../../lambdas/core/use-cases/lane-listening";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { memoryDeps } from "../support/memory-ports";

/** Decision 0049: what POST /internal/lanes hands an idle worker, and the session policy it rests on. */
const NOW = Date.UTC(2026, 11, 3, 9, 0, 0);
const pool = { principal: "arn:aws:iam::1:role/pool", tenants: ["tenant-a", "tenant-b"] };

function fakeLanes(access: ListenAccess = granted(), refusal?: string) {
  const calls: Array<{ pairs: unknown; gone: readonly string[] }> = [];
  const sessions: Array<{ urls: readonly string[]; name: string; now: number }> = [];
  const lanes: LaneListening = {
    refusal: () => refusal,
    open: async (pairs, gone) => {
      calls.push({ pairs, gone });
      return pairs.map((p) => ({ ...p, queueUrl: `http://q/runs_${p.tenant}-${p.type}` }));
    },
    access: async (urls, name, now) => {
      sessions.push({ urls, name, now });
      return access;
    },
  };
  return { lanes, calls, sessions };
}
/** Quotas that admit every type but those listed full. */
function depsOf(fake: ReturnType<typeof fakeLanes>, full: readonly string[] = []) {
  const admitted: string[] = [];
  return {
    lanes: fake.lanes,
    clock: new FixedClock(NOW),
    admitted,
    quotas: {
      admitType: async (tenant: string, type: string): Promise<Admission> => {
        if (full.includes(`${tenant}/${type}`)) {
          return { admitted: false, quota: "job-types", limit: 1, retryAfterSeconds: 3_600 };
        }
        admitted.push(`${tenant}/${type}`);
        return { admitted: true };
      },
    },
  };
}
function granted(): ListenAccess {
  return {
    granted: true,
    region: "eu-west-1",
    credentials: { accessKeyId: "AK", secretAccessKey: "SK", sessionToken: "T" },
    expiresAt: NOW + 3_600_000,
  };
}

describe("grantLaneListening", () => {
  it("opens every tenant's lane of every type asked for and hands credentials for exactly those", async () => {
    const fake = fakeLanes();
    const answer = await grantLaneListening(depsOf(fake), pool, {
      workerId: "w-1",
      types: ["email", "sms", "email"],
      gone: ["http://q/runs_tenant-a-email"],
    });
    const pairs = [
      { tenant: "tenant-a", type: "email" },
      { tenant: "tenant-a", type: "sms" },
      { tenant: "tenant-b", type: "email" },
      { tenant: "tenant-b", type: "sms" },
    ];
    expect(fake.calls).toEqual([{ pairs, gone: ["http://q/runs_tenant-a-email"] }]);
    expect(answer.lanes.map(({ tenant, type }) => ({ tenant, type }))).toEqual(pairs);
    expect(fake.sessions).toEqual([{ urls: answer.lanes.map((l) => l.queueUrl), name: "w-1", now: NOW }]);
    expect(answer.listen).toEqual({
      region: "eu-west-1",
      credentials: { accessKeyId: "AK", secretAccessKey: "SK", sessionToken: "T" },
      expiresAt: "2026-12-03T10:00:00Z",
      peekVisibilitySeconds: PEEK_VISIBILITY_SECONDS,
    });
  });

  it("never names another tenant's lane: only the tenants the worker's binding serves", async () => {
    const fake = fakeLanes();
    const answer = await grantLaneListening(
      depsOf(fake),
      { principal: "p", tenants: ["tenant-b"] },
      { workerId: "w", types: ["email"] },
    );
    expect(answer.lanes.map((l) => l.tenant)).toEqual(["tenant-b"]);
  });

  it("answers without listening, opening nothing, past LISTEN_MAX_LANES lanes", async () => {
    const fake = fakeLanes();
    const types = Array.from({ length: LISTEN_MAX_LANES / 2 + 1 }, (_, i) => `t${i}`);
    const answer = await grantLaneListening(depsOf(fake), pool, {
      workerId: "w",
      types,
    });
    expect(answer).toEqual({ lanes: [], reason: expect.stringMatching(/more than the 16/) });
    expect(fake.calls).toEqual([]);
    expect(fake.sessions).toEqual([]);
  });

  it("counts a listened type in the tenant's types quota, and leaves out the lanes it refuses, saying so", async () => {
    const fake = fakeLanes();
    const deps = depsOf(fake, ["tenant-b/sms"]);
    const answer = await grantLaneListening(deps, pool, { workerId: "w", types: ["email", "sms"] });
    expect(deps.admitted).toEqual(["tenant-a/email", "tenant-a/sms", "tenant-b/email"]);
    expect(answer.lanes.map((l) => `${l.tenant}/${l.type}`)).toEqual(deps.admitted);
    expect(answer.reason).toMatch(/tenant-b\/sms.*job-types quota/);
    expect(answer.listen).toBeDefined();
    const none = await grantLaneListening(
      depsOf(fakeLanes(), ["tenant-b/sms"]),
      { principal: "p", tenants: ["tenant-b"] },
      {
        workerId: "w",
        types: ["sms"],
      },
    );
    expect(none).toEqual({ lanes: [], reason: expect.stringMatching(/job-types quota/) });
  });

  it("counts and makes nothing when the lanes could not be listened on anyway", async () => {
    const fake = fakeLanes(granted(), "no role");
    const deps = depsOf(fake);
    expect(await grantLaneListening(deps, pool, { workerId: "w", types: ["email"] })).toEqual({
      lanes: [],
      reason: "no role",
    });
    expect(deps.admitted).toEqual([]);
    expect(fake.calls).toEqual([]);
  });

  it("passes on why a deployment hands out no credentials, with no lanes", async () => {
    const fake = fakeLanes({ granted: false, reason: "no role" });
    const answer = await grantLaneListening(depsOf(fake), pool, {
      workerId: "w",
      types: ["email"],
    });
    expect(answer).toEqual({ lanes: [], reason: "no role" });
  });

  it("refuses a malformed request naming the field, opening nothing", async () => {
    const fake = fakeLanes();
    for (const [body, field] of [
      [{ workerId: "w", types: [] }, "types"],
      [{ workerId: "w", types: ["email"], gone: "x" }, "gone"],
      [{ workerId: "w", types: ["email"], extra: 1 }, "extra"],
      [{ types: ["email"] }, "workerId"],
    ] as const) {
      const error = await grantLaneListening(depsOf(fake), pool, body).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect(`${(error as ValidationError).field} ${(error as Error).message}`).toContain(field);
    }
    expect(fake.calls).toEqual([]);
  });
});

describe("POST /internal/leases after a ring", () => {
  it("asks the queue to poll the lane that rang first, and only a lane of the worker's own tenants", async () => {
    const deps = memoryDeps(NOW);
    const seen: ReceiveRequest[] = [];
    deps.queue.receive = async (request) => {
      seen.push(request);
      return [];
    };
    const worker = { principal: "p", tenants: ["tenant-a"] };
    await leaseRuns(deps, worker, { workerId: "w", types: ["email"], waitSeconds: 0 });
    await leaseRuns(deps, worker, {
      workerId: "w",
      types: ["email"],
      waitSeconds: 0,
      prefer: { tenant: "tenant-a", type: "email" },
    });
    expect(seen.map((r) => r.first)).toEqual([undefined, laneKeyOf({ tenant: "tenant-a", type: "email" })]);
    // The queue polls only the worker's tenants' lanes: a hint naming another changes nothing.
    expect(seen.every((r) => r.tenants.join() === "tenant-a")).toBe(true);
    await expect(
      leaseRuns(deps, worker, {
        workerId: "w",
        types: ["email"],
        prefer: { tenant: "tenant-a", type: "bad type!" },
      }),
    ).rejects.toBeInstanceOf(ValidationError);
  });
});

describe("laneListenPolicy", () => {
  const url = (name: string) => `https://sqs.eu-west-1.amazonaws.com/123456789012/${name}`;

  it("allows ReceiveMessage alone, on each lane and its later generations, nothing else", () => {
    const policy = laneListenPolicy("aws", [
      url("Prod-runs_0123456789abcdef"),
      url("Prod-runs_fedcba9876543210-3"),
    ]);
    expect(JSON.parse(policy ?? "{}")).toEqual({
      Version: "2012-10-17",
      Statement: [
        {
          Effect: "Allow",
          Action: "sqs:ReceiveMessage",
          Resource: [
            "arn:aws:sqs:*:*:Prod-runs_0123456789abcdef*",
            "arn:aws:sqs:*:*:Prod-runs_fedcba9876543210*",
          ],
        },
      ],
    });
  });

  it("keeps the partition (GovCloud, China)", () => {
    expect(laneListenPolicy("aws-cn", [url("Prod-runs_0123456789abcdef")])).toContain("arn:aws-cn:sqs:");
  });

  it("fits sixteen lanes of SQS's longest queue names (80 characters) in STS's 2,048, and refuses what would not fit", () => {
    const lanes = (n: number) =>
      Array.from({ length: n }, (_, i) => url(`${"S".repeat(60)}_${i.toString(16).padStart(16, "0")}-12`));
    expect(lanes(1)[0]?.split("/").pop()).toHaveLength(80);
    const sixteen = laneListenPolicy("aws", lanes(16));
    expect(sixteen?.length).toBeLessThanOrEqual(SESSION_POLICY_MAX_CHARS);
    expect(laneListenPolicy("aws", lanes(40))).toBeUndefined();
  });
});
