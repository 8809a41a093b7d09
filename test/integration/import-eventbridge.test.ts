import {
  GetScheduleCommand,
  type GetScheduleCommandOutput,
  ListSchedulesCommand,
  SchedulerClient,
} from "@aws-sdk/client-scheduler";
import { JobschedClient } from "@jobsched/client";
import { jobResponse, previewResponse } from "@jobsched/contract";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importSchedules } from "../../cli/import/import-schedules";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { bodyOf } from "../support/bodies";
import { createTestStack } from "../support/stack";

/**
 * `jobsched import eventbridge-scheduler` (issue 17), with EventBridge Scheduler mocked
 * (aws-sdk-client-mock) and the real API on dynalite: 21 schedules covering every expression
 * form, time zones with and without DST (both hemispheres), the disabled state, the flexible
 * window, retry and dead-letter settings, and Lambda, SQS and unsupported targets. Each
 * converted job's next runs (the API's preview of the job's own schedule fields) are checked
 * against instants worked out by hand from EventBridge's documented semantics: AWS day-of-week
 * numbers 1-7 are SUN-SAT; a wall time skipped by DST does not run; the year field bounds it.
 */
const ACCOUNT = "123456789012";
/** The schedules' role: a jobsched target role in tenant A's own account (decision 0035). */
const ROLE = "arn:aws:iam::000000000000:role/jobsched-target-scheduler";
const FUNCTION = `arn:aws:lambda:eu-west-1:${ACCOUNT}:function:reminders`;

function schedule(name: string, fields: Partial<GetScheduleCommandOutput>): GetScheduleCommandOutput {
  return {
    $metadata: {},
    Name: name,
    GroupName: "default",
    Arn: `arn:aws:scheduler:eu-west-1:${ACCOUNT}:schedule/default/${name}`,
    State: "ENABLED",
    FlexibleTimeWindow: { Mode: "OFF" },
    Target: { Arn: FUNCTION, RoleArn: ROLE },
    ...fields,
  };
}

const SCHEDULES: GetScheduleCommandOutput[] = [
  schedule("at-utc", { ScheduleExpression: "at(2027-06-01T09:00:00)" }),
  schedule("at-new-york", {
    ScheduleExpression: "at(2027-06-01T09:00:00)",
    ScheduleExpressionTimezone: "America/New_York",
  }),
  schedule("at-kolkata", {
    ScheduleExpression: "at(2027-06-01T09:00:00)",
    ScheduleExpressionTimezone: "Asia/Kolkata",
  }),
  schedule("at-past", { ScheduleExpression: "at(2020-01-01T00:00:00)" }),
  schedule("rate-minutes", {
    ScheduleExpression: "rate(5 minutes)",
    StartDate: new Date("2027-01-01T00:00:00Z"),
  }),
  schedule("rate-hour", {
    ScheduleExpression: "rate(1 hour)",
    StartDate: new Date("2027-01-01T00:30:00Z"),
    EndDate: new Date("2027-01-01T02:30:00Z"),
  }),
  schedule("rate-days-disabled", {
    ScheduleExpression: "rate(2 days)",
    StartDate: new Date("2027-01-01T06:00:00Z"),
    State: "DISABLED",
  }),
  schedule("cron-named-weekdays-london", {
    ScheduleExpression: "cron(0 9 ? * MON-FRI *)",
    ScheduleExpressionTimezone: "Europe/London",
  }),
  schedule("cron-numbered-weekdays-new-york", {
    ScheduleExpression: "cron(0 9 ? * 2-6 *)",
    ScheduleExpressionTimezone: "America/New_York",
  }),
  schedule("cron-spring-gap-london", {
    ScheduleExpression: "cron(30 1 * * ? *)",
    ScheduleExpressionTimezone: "Europe/London",
  }),
  schedule("cron-spring-gap-sydney", {
    ScheduleExpression: "cron(30 2 * * ? *)",
    ScheduleExpressionTimezone: "Australia/Sydney",
  }),
  schedule("cron-last-day", { ScheduleExpression: "cron(0 12 L * ? *)" }),
  schedule("cron-third-friday", { ScheduleExpression: "cron(0 10 ? * 6#3 *)" }),
  schedule("cron-last-friday", {
    ScheduleExpression: "cron(0 8 ? * 6L *)",
    Target: { Arn: `${FUNCTION}:live`, RoleArn: ROLE, Input: "not json" },
  }),
  schedule("cron-one-year", { ScheduleExpression: "cron(0 9 * * ? 2028)" }),
  schedule("cron-year-list", { ScheduleExpression: "cron(0 9 * * ? 2027,2029)" }),
  schedule("cron-weekday-nearest", { ScheduleExpression: "cron(0 9 15W * ? *)" }),
  schedule("cron-five-fields", { ScheduleExpression: "cron(0 9 * * ?)" }),
  schedule("flexible-retry-dlq", {
    GroupName: "billing",
    Arn: `arn:aws:scheduler:eu-west-1:${ACCOUNT}:schedule/billing/flexible-retry-dlq`,
    ScheduleExpression: "cron(0 6 * * ? *)",
    FlexibleTimeWindow: { Mode: "FLEXIBLE", MaximumWindowInMinutes: 15 },
    Target: {
      Arn: FUNCTION,
      RoleArn: ROLE,
      RetryPolicy: { MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 3600 },
      DeadLetterConfig: { Arn: `arn:aws:sqs:eu-west-1:${ACCOUNT}:scheduler-dlq` },
    },
  }),
  schedule("sqs-fifo", {
    GroupName: "billing",
    Arn: `arn:aws:scheduler:eu-west-1:${ACCOUNT}:schedule/billing/sqs-fifo`,
    ScheduleExpression: "rate(10 minutes)",
    StartDate: new Date("2027-01-01T00:00:00Z"),
    Target: {
      Arn: `arn:aws:sqs:eu-west-1:${ACCOUNT}:invoices.fifo`,
      RoleArn: ROLE,
      Input: '{"invoice":42}',
    },
  }),
  schedule("ecs-task", {
    ScheduleExpression: "rate(1 hour)",
    Target: { Arn: `arn:aws:ecs:eu-west-1:${ACCOUNT}:cluster/main`, RoleArn: ROLE },
  }),
];

/** The next three runs each converted schedule must have, from `from`, by EventBridge's rules. */
const EXPECTED: Record<string, { from: string; runs: string[] }> = {
  "at-utc": { from: "2027-01-01T00:00:00Z", runs: ["2027-06-01T09:00:00Z"] },
  "at-new-york": { from: "2027-01-01T00:00:00Z", runs: ["2027-06-01T13:00:00Z"] }, // EDT, UTC-4
  "at-kolkata": { from: "2027-01-01T00:00:00Z", runs: ["2027-06-01T03:30:00Z"] }, // IST, UTC+5:30
  "rate-minutes": {
    from: "2027-01-01T00:00:00Z",
    runs: ["2027-01-01T00:00:00Z", "2027-01-01T00:05:00Z", "2027-01-01T00:10:00Z"],
  },
  // Ends at its EndDate: three runs and no more.
  "rate-hour": {
    from: "2026-12-31T00:00:00Z",
    runs: ["2027-01-01T00:30:00Z", "2027-01-01T01:30:00Z", "2027-01-01T02:30:00Z"],
  },
  "rate-days-disabled": {
    from: "2027-01-01T00:00:00Z",
    runs: ["2027-01-01T06:00:00Z", "2027-01-03T06:00:00Z", "2027-01-05T06:00:00Z"],
  },
  // Friday in GMT, then Monday and Tuesday in BST (the UK changes on 2027-03-28).
  "cron-named-weekdays-london": {
    from: "2027-03-26T00:00:00Z",
    runs: ["2027-03-26T09:00:00Z", "2027-03-29T08:00:00Z", "2027-03-30T08:00:00Z"],
  },
  // AWS 2-6 is MON-FRI. Friday in EST, then Monday and Tuesday in EDT (the US changes on 2027-03-14).
  "cron-numbered-weekdays-new-york": {
    from: "2027-03-12T00:00:00Z",
    runs: ["2027-03-12T14:00:00Z", "2027-03-15T13:00:00Z", "2027-03-16T13:00:00Z"],
  },
  // 01:30 does not exist in London on 2027-03-28: EventBridge skips it.
  "cron-spring-gap-london": {
    from: "2027-03-27T00:00:00Z",
    runs: ["2027-03-27T01:30:00Z", "2027-03-29T00:30:00Z", "2027-03-30T00:30:00Z"],
  },
  // 02:30 does not exist in Sydney on 2027-10-03 (AEST to AEDT): skipped.
  "cron-spring-gap-sydney": {
    from: "2027-10-01T12:00:00Z",
    runs: ["2027-10-01T16:30:00Z", "2027-10-03T15:30:00Z", "2027-10-04T15:30:00Z"],
  },
  "cron-last-day": {
    from: "2027-02-01T00:00:00Z",
    runs: ["2027-02-28T12:00:00Z", "2027-03-31T12:00:00Z", "2027-04-30T12:00:00Z"],
  },
  // AWS 6 is Friday; 2027-01-01 is a Friday.
  "cron-third-friday": {
    from: "2027-01-01T00:00:00Z",
    runs: ["2027-01-15T10:00:00Z", "2027-02-19T10:00:00Z", "2027-03-19T10:00:00Z"],
  },
  "cron-last-friday": {
    from: "2027-01-01T00:00:00Z",
    runs: ["2027-01-29T08:00:00Z", "2027-02-26T08:00:00Z", "2027-03-26T08:00:00Z"],
  },
  // The year field bounds the schedule: nothing before 2028.
  "cron-one-year": {
    from: "2027-06-01T00:00:00Z",
    runs: ["2028-01-01T09:00:00Z", "2028-01-02T09:00:00Z", "2028-01-03T09:00:00Z"],
  },
  // A 15-minute flexible window: each run somewhere in the 15 minutes after 06:00.
  "flexible-retry-dlq": { from: "2027-01-01T00:00:00Z", runs: [] },
  "sqs-fifo": {
    from: "2027-01-01T00:00:00Z",
    runs: ["2027-01-01T00:00:00Z", "2027-01-01T00:10:00Z", "2027-01-01T00:20:00Z"],
  },
};

const NOT_CONVERTED: Record<string, RegExp> = {
  "at-past": /has passed/,
  "cron-year-list": /year 2027,2029/,
  "cron-weekday-nearest": /W \(nearest weekday\)/,
  "cron-five-fields": /six fields/,
  "ecs-task": /target is ecs/,
};

const scheduler = mockClient(SchedulerClient);
let api: TestApi;

beforeAll(async () => {
  api = await startTestApi(await createTestStack("import"));
  // Two pages, as ListSchedules pages them.
  scheduler.on(ListSchedulesCommand).callsFake((input: { NextToken?: string; GroupName?: string }) => {
    const all = SCHEDULES.filter((s) => !input.GroupName || s.GroupName === input.GroupName);
    const page = input.NextToken === "2" ? all.slice(10) : all.slice(0, 10);
    return {
      Schedules: page.map((s) => ({ Name: s.Name, GroupName: s.GroupName, Arn: s.Arn })),
      ...(input.NextToken === undefined && all.length > 10 ? { NextToken: "2" } : {}),
    };
  });
  scheduler
    .on(GetScheduleCommand)
    .callsFake((input: { Name: string; GroupName: string }) =>
      SCHEDULES.find((s) => s.Name === input.Name && s.GroupName === input.GroupName),
    );
});

afterAll(async () => {
  await api?.close();
});

describe("jobsched import eventbridge-scheduler", () => {
  it("creates a job per convertible schedule, lists the rest with the reason, and a second run creates nothing", async () => {
    const client = new SchedulerClient({ region: "eu-west-1" });
    const rows = await importSchedules(client, new JobschedClient({ transport: api.tenantA }), {
      now: Date.now,
    });
    expect(rows).toHaveLength(SCHEDULES.length);
    const byName = new Map(rows.map((r) => [r.name, r]));

    for (const [name, reason] of Object.entries(NOT_CONVERTED)) {
      expect(byName.get(name)?.result, name).toBe("not-converted");
      expect(byName.get(name)?.reason, name).toMatch(reason);
    }
    for (const name of Object.keys(EXPECTED)) expect(byName.get(name)?.result, name).toBe("created");

    for (const [name, expected] of Object.entries(EXPECTED)) {
      const row = byName.get(name);
      const job = bodyOf(jobResponse, await api.tenantA("GET", `/api/v1/jobs/${row?.jobId}`));
      expect(job.labels, name).toMatchObject({ "eventbridge-schedule": name });
      if (expected.runs.length === 0) continue;
      const query: Record<string, string> = { from: expected.from, count: String(expected.runs.length + 1) };
      for (const field of ["cron", "timeZone", "dstPolicy", "runAt", "startAt", "endAt"] as const) {
        const value = job[field as keyof typeof job];
        if (typeof value === "string") query[field] = value;
      }
      if (job.interval) query.interval = job.interval.every;
      const preview = bodyOf(
        previewResponse,
        await api.tenantA("GET", "/api/v1/schedules/preview", { query }),
      );
      const runs = preview.runs.map((r) => r.at).slice(0, expected.runs.length);
      expect(runs, name).toEqual(expected.runs);
      if (name === "rate-hour" || name.startsWith("at-"))
        expect(preview.runs, name).toHaveLength(expected.runs.length);
    }

    // Disabled: paused. Flexible window, retries, event age, DLQ: jitter, attempts, lateness, a note.
    const disabled = byName.get("rate-days-disabled");
    expect(disabled?.paused).toBe(true);
    expect(bodyOf(jobResponse, await api.tenantA("GET", `/api/v1/jobs/${disabled?.jobId}`)).status).toBe(
      "paused",
    );
    const flexible = byName.get("flexible-retry-dlq");
    const flexibleJob = bodyOf(jobResponse, await api.tenantA("GET", `/api/v1/jobs/${flexible?.jobId}`));
    expect(flexibleJob).toMatchObject({
      jitter: "PT15M",
      maxAttempts: 4,
      maxLateness: "PT1H",
      labels: { "eventbridge-group": "billing" },
    });
    expect(flexible?.notes?.join(" ")).toMatch(/scheduler-dlq/);
    // Targets: the alias kept with a string payload and invoked asynchronously as EventBridge
    // Scheduler invokes it (a synchronous invoke waits at most 15 s), the FIFO queue as its URL
    // with the JSON input.
    const lastFriday = bodyOf(
      jobResponse,
      await api.tenantA("GET", `/api/v1/jobs/${byName.get("cron-last-friday")?.jobId}`),
    );
    expect(lastFriday).toMatchObject({
      type: "@lambda",
      target: { kind: "lambda", functionArn: `${FUNCTION}:live`, roleArn: ROLE, invocation: "async" },
      payload: "not json",
    });
    const fifo = bodyOf(
      jobResponse,
      await api.tenantA("GET", `/api/v1/jobs/${byName.get("sqs-fifo")?.jobId}`),
    );
    expect(fifo).toMatchObject({
      type: "@sqs",
      target: { kind: "sqs", queueUrl: `https://sqs.eu-west-1.amazonaws.com/${ACCOUNT}/invoices.fifo` },
      payload: { invoice: 42 },
    });

    const before = (await api.tenantA("GET", "/api/v1/jobs", { query: { limit: "100" } })).body as {
      jobs: unknown[];
    };
    const again = await importSchedules(client, new JobschedClient({ transport: api.tenantA }), {
      now: Date.now,
    });
    expect(again.filter((r) => r.result === "created")).toEqual([]);
    expect(again.filter((r) => r.result === "exists")).toHaveLength(Object.keys(EXPECTED).length);
    const after = (await api.tenantA("GET", "/api/v1/jobs", { query: { limit: "100" } })).body as {
      jobs: unknown[];
    };
    expect(after.jobs).toHaveLength(before.jobs.length);
    expect(after.jobs).toHaveLength(Object.keys(EXPECTED).length);

    // Read only: nothing but ListSchedules and GetSchedule was ever sent to EventBridge.
    const sent = new Set(scheduler.calls().map((call) => call.args[0].constructor.name));
    expect([...sent].sort()).toEqual(["GetScheduleCommand", "ListSchedulesCommand"]);
  }, 60_000);

  it("--dry-run converts and lists without creating anything; --group reads one group", async () => {
    const client = new SchedulerClient({ region: "eu-west-1" });
    const stack = await createTestStack("import-dry");
    const dryApi = await startTestApi(stack);
    try {
      const rows = await importSchedules(client, new JobschedClient({ transport: dryApi.tenantA }), {
        now: Date.now,
        dryRun: true,
        group: "billing",
      });
      expect(rows.map((r) => [r.name, r.result])).toEqual([
        ["flexible-retry-dlq", "would-create"],
        ["sqs-fifo", "would-create"],
      ]);
      expect(((await dryApi.tenantA("GET", "/api/v1/jobs")).body as { jobs: unknown[] }).jobs).toEqual([]);
    } finally {
      await dryApi.close();
    }
  }, 30_000);
});
