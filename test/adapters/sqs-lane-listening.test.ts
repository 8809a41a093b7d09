import { AssumeRoleCommand, STSClient } from "@aws-sdk/client-sts";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { SqsLaneListening } from "../../lambdas/adapters/sqs/sqs-lane-listening";

/** Decision 0049: the lanes a listening worker gets, and the credentials, in AWS and locally. */
const NOW = Date.UTC(2026, 11, 3, 9, 0, 0);
const ROLE = "arn:aws:iam::123456789012:role/Prod-LaneListener";
const laneUrl = (tenant: string, type: string) =>
  `https://sqs.eu-west-1.amazonaws.com/123456789012/Prod-runs_${tenant}${type}`.padEnd(60, "0");

function fakeDirectory() {
  const forgotten: Array<{ pairs: unknown; gone: readonly string[] }> = [];
  return {
    forgotten,
    directory: {
      laneFor: async (tenant: string, type: string) => laneUrl(tenant, type),
      laneName: (tenant: string, type: string) => laneUrl(tenant, type).split("/").pop() ?? "",
      forgetIfGone: (pairs: unknown, gone: readonly string[]) => {
        forgotten.push({ pairs, gone });
      },
    },
  };
}

describe("SqsLaneListening", () => {
  const sts = mockClient(STSClient);
  beforeEach(() => sts.reset());

  it("assumes the listener role for an hour with a session policy naming the worker's lanes alone", async () => {
    sts.on(AssumeRoleCommand).resolves({
      Credentials: {
        AccessKeyId: "ASIA1",
        SecretAccessKey: "secret",
        SessionToken: "token",
        Expiration: new Date(NOW + 3_600_000),
      },
    });
    const { directory } = fakeDirectory();
    const listening = new SqsLaneListening(directory, {
      kind: "role",
      roleArn: ROLE,
      sts: new STSClient({ region: "eu-west-1" }),
      region: "eu-west-1",
    });
    const lanes = await listening.open([{ tenant: "a", type: "x" }], []);
    const access = await listening.access(
      lanes.map((l) => l.queueUrl),
      "host/42 worker",
      NOW,
    );
    expect(access).toEqual({
      granted: true,
      region: "eu-west-1",
      credentials: { accessKeyId: "ASIA1", secretAccessKey: "secret", sessionToken: "token" },
      expiresAt: NOW + 3_600_000,
    });
    const [call] = sts.commandCalls(AssumeRoleCommand);
    const input = call?.args[0].input;
    expect(input?.RoleArn).toBe(ROLE);
    expect(input?.DurationSeconds).toBe(3600);
    expect(input?.RoleSessionName).toBe("lanes-host-42-worker");
    const name = lanes[0]?.queueUrl.split("/").pop();
    expect(JSON.parse(input?.Policy ?? "{}").Statement).toEqual([
      { Effect: "Allow", Action: "sqs:ReceiveMessage", Resource: [`arn:aws:sqs:*:*:${name}*`] },
    ]);
  });

  it("refuses, without asking STS, lanes whose policy would pass STS's limit", async () => {
    const listening = new SqsLaneListening(fakeDirectory().directory, {
      kind: "role",
      roleArn: ROLE,
      sts: new STSClient({ region: "eu-west-1" }),
      region: "eu-west-1",
    });
    const urls = Array.from({ length: 40 }, (_, i) => laneUrl(`tenant-${i}`, "x".repeat(40)));
    const access = await listening.access(urls, "w", NOW);
    expect(access).toEqual({ granted: false, reason: expect.stringMatching(/STS's limit/) });
    expect(sts.commandCalls(AssumeRoleCommand)).toHaveLength(0);
  });

  it("locally hands the emulator's endpoint and its documented dummy credentials", async () => {
    const listening = new SqsLaneListening(fakeDirectory().directory, {
      kind: "local",
      endpoint: "http://127.0.0.1:9324",
      region: "us-east-1",
    });
    expect(await listening.access(["http://127.0.0.1:9324/queue/runs_1"], "w", NOW)).toEqual({
      granted: true,
      region: "us-east-1",
      endpoint: "http://127.0.0.1:9324",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
      expiresAt: NOW + 3_600_000,
    });
  });

  it("says before anything is counted or made when lanes could not be listened on: no role, or a policy past STS's limit", () => {
    const role = {
      kind: "role",
      roleArn: ROLE,
      sts: new STSClient({ region: "eu-west-1" }),
      region: "eu-west-1",
    } as const;
    const few = [{ tenant: "a", type: "x" }];
    const many = Array.from({ length: 40 }, (_, i) => ({ tenant: `tenant-${i}`, type: "x".repeat(40) }));
    expect(new SqsLaneListening(fakeDirectory().directory, role).refusal(few)).toBeUndefined();
    expect(new SqsLaneListening(fakeDirectory().directory, role).refusal(many)).toMatch(/STS's limit/);
    expect(new SqsLaneListening(fakeDirectory().directory, { kind: "none" }).refusal(few)).toMatch(
      /no lane listener role/,
    );
    const local = { kind: "local", endpoint: "http://127.0.0.1:1", region: "us-east-1" } as const;
    expect(new SqsLaneListening(fakeDirectory().directory, local).refusal(many)).toBeUndefined();
    expect(sts.commandCalls(AssumeRoleCommand)).toHaveLength(0);
  });

  it("says why a deployment without a listener role hands out nothing", async () => {
    const listening = new SqsLaneListening(fakeDirectory().directory, { kind: "none" });
    expect(await listening.access(["u"], "w", NOW)).toEqual({
      granted: false,
      reason: expect.stringMatching(/no lane listener role/),
    });
  });

  it("passes lanes reported gone to the directory with the worker's lanes, before opening them", async () => {
    const { directory, forgotten } = fakeDirectory();
    const listening = new SqsLaneListening(directory, { kind: "none" });
    const gone = [laneUrl("a", "x")];
    const pairs = [
      { tenant: "a", type: "x" },
      { tenant: "b", type: "x" },
    ];
    const lanes = await listening.open(pairs, gone);
    expect(forgotten).toEqual([{ pairs, gone }]);
    expect(lanes.map((l) => l.queueUrl)).toEqual([laneUrl("a", "x"), laneUrl("b", "x")]);
    forgotten.length = 0;
    await listening.open([{ tenant: "a", type: "x" }], []);
    expect(forgotten).toEqual([]);
  });
});
