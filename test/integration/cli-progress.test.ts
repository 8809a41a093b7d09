import {
  GetScheduleCommand,
  type GetScheduleCommandOutput,
  ListSchedulesCommand,
  SchedulerClient,
} from "@aws-sdk/client-scheduler";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../cli/main";
import { loadLocalCredentials } from "../../local/local-credentials";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { createTestStack } from "../support/stack";

/**
 * Progress on long CLI work (issue 29): `jobsched import eventbridge-scheduler` run in-process
 * against the real API (dynalite, the SigV4-checking gateway) with EventBridge Scheduler mocked,
 * its progress drawn on a stream that says it is a terminal (cli-progress's own test hook: it
 * draws only on a TTY). On a terminal the bar moves through the schedules and is cleared before
 * the result; with --json, or on a stream that is not a terminal (a pipe), nothing is drawn.
 */
const COUNT = 12;
const schedules: GetScheduleCommandOutput[] = Array.from({ length: COUNT }, (_, i) => ({
  $metadata: {},
  Name: `reminder-${i}`,
  GroupName: "default",
  Arn: `arn:aws:scheduler:eu-west-1:123456789012:schedule/default/reminder-${i}`,
  State: "ENABLED",
  FlexibleTimeWindow: { Mode: "OFF" },
  ScheduleExpression: `cron(${i} 9 ? * MON-FRI *)`,
  ScheduleExpressionTimezone: "Europe/London",
  Target: {
    Arn: "arn:aws:lambda:eu-west-1:000000000000:function:reminders",
    RoleArn: "arn:aws:iam::000000000000:role/jobsched-target-scheduler",
  },
}));

let api: TestApi;
const scheduler = mockClient(SchedulerClient);

beforeAll(async () => {
  api = await startTestApi(await createTestStack("cli-progress"));
  const credentials = loadLocalCredentials();
  const tenant = [...credentials.byAccessKey.values()].find((c) => c.kind === "tenant");
  // The CLI signs with the standard chain: here, the local runtime's development keys.
  process.env.AWS_ACCESS_KEY_ID = tenant?.accessKeyId ?? "";
  process.env.AWS_SECRET_ACCESS_KEY = tenant?.secretAccessKey ?? "";
  scheduler.on(ListSchedulesCommand).resolves({
    Schedules: schedules.map((s) => ({ Name: s.Name, GroupName: s.GroupName, Arn: s.Arn })),
  });
  scheduler.on(GetScheduleCommand).callsFake(async (input: { Name: string }) => {
    // As a real GetSchedule takes a moment: the bar is redrawn as the rows come.
    await new Promise((done) => setTimeout(done, 120));
    return schedules.find((s) => s.Name === input.Name);
  });
});
afterAll(async () => {
  scheduler.restore();
  await api?.close();
});

/** The CLI in-process: what it prints, and what it draws on a stream that is or is not a TTY. */
async function cli(args: string[], isTTY: boolean) {
  const drawn: string[] = [];
  const printed: string[] = [];
  const errors: string[] = [];
  const code = await main(["--endpoint", api.url, "--region", "us-east-1", ...args], {
    log: (text) => printed.push(text),
    error: (text) => errors.push(text),
    progress: { isTTY, write: (text: string) => drawn.push(text) },
  });
  return { code, drawn: drawn.join(""), printed: printed.join("\n"), errors: errors.join("\n") };
}

describe("progress of jobsched import eventbridge-scheduler", () => {
  it("on a terminal, draws the count through the schedules, then clears it before the result", async () => {
    const { code, drawn, printed, errors } = await cli(["import", "eventbridge-scheduler"], true);
    expect(errors).toBe("");
    expect(code).toBe(0);
    expect(printed).toContain(`${COUNT} created`);
    // Updates as the import went: the total, and counts in between, with the schedule at hand.
    expect(drawn).toContain(`/${COUNT} schedules`);
    const counts = [...drawn.matchAll(/(\d+)\/12 schedules/g)].map((m) => Number(m[1]));
    expect(new Set(counts).size).toBeGreaterThanOrEqual(3);
    expect(counts.at(-1)).toBe(COUNT);
    expect(drawn).toMatch(/default\/reminder-\d+: created/);
    // Cleared at the end: the last thing drawn goes to the line's start and erases it
    // (cli-progress's clearOnComplete), so the result prints on a clean line.
    expect(drawn.endsWith("\u001b[1G\u001b[2K")).toBe(true);
  });

  it("with --json, or piped, draws nothing and prints the same result", async () => {
    const json = await cli(["--json", "import", "eventbridge-scheduler"], true);
    expect(json.code).toBe(0);
    expect(json.drawn).toBe("");
    const rows = JSON.parse(json.printed) as Array<{ result: string }>;
    expect(rows.map((r) => r.result)).toEqual(Array(COUNT).fill("exists"));

    const piped = await cli(["import", "eventbridge-scheduler"], false);
    expect(piped.code).toBe(0);
    expect(piped.drawn).toBe("");
    expect(piped.printed).toContain(`${COUNT} already imported`);
  });
});
