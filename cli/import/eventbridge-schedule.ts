import type { GetScheduleCommandOutput } from "@aws-sdk/client-scheduler";
import { DateTime } from "luxon";

/**
 * One EventBridge Scheduler schedule as a jobsched create request, following EventBridge's
 * documented semantics (decision 0029), or the reason it cannot be converted:
 *
 * - `at(yyyy-mm-ddThh:mm:ss)`: a one-off at that wall time in ScheduleExpressionTimezone (UTC
 *   when unset); one already past is not converted (EventBridge would not run it either).
 * - `rate(n minute|minutes|hour|hours|day|days)`: an interval, from StartDate when set.
 * - `cron(min hour day-of-month month day-of-week year)`: the five Vixie fields, with `?` as `*`
 *   and day-of-week numbers moved from AWS's 1-7 (SUN-SAT) to 0-6; `L` and `#` kept, `W`
 *   refused. The year: `*`, one year or a range of years become the schedule's start and end;
 *   a list or step of years is refused. DST as EventBridge documents it: a wall time skipped
 *   by spring-forward does not run, a repeated one runs once (dstPolicy `skip-gap`).
 * - StartDate and EndDate: startAt and endAt; FlexibleTimeWindow FLEXIBLE: a jitter window of
 *   its MaximumWindowInMinutes; RetryPolicy: maxAttempts (retries + 1, at most 100) and
 *   MaximumEventAgeInSeconds as maxLateness; State DISABLED: the job is paused after create.
 * - Targets: a Lambda function (unqualified, a version or an alias) or an SQS queue, with the schedule's
 *   execution role; the target's Input (JSON, or a string) is the payload. A function is
 *   invoked asynchronously (`invocation: "async"`), as EventBridge Scheduler invokes it: a
 *   synchronous invoke waits at most 15 s, and a schedule's function may run up to 15 minutes
 *   (decision 0033). Other targets are refused with their kind. A dead-letter queue is listed
 *   as a note: jobsched keeps its own.
 */
export type Conversion =
  | {
      readonly ok: true;
      readonly body: Record<string, unknown>;
      readonly paused: boolean;
      readonly notes: readonly string[];
    }
  | { readonly ok: false; readonly reason: string };

const RATE = /^rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)$/;
const AT = /^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$/;
const CRON = /^cron\((.+)\)$/;
const MAX_ATTEMPTS = 100;

export function convertSchedule(schedule: GetScheduleCommandOutput, now: number): Conversion {
  const expression = (schedule.ScheduleExpression ?? "").trim();
  const timeZone = schedule.ScheduleExpressionTimezone ?? "UTC";
  if (!DateTime.now().setZone(timeZone).isValid) return refuse(`time zone ${timeZone} is not an IANA zone`);
  const notes: string[] = [];

  const when = scheduleFields(expression, timeZone, now);
  if (!when.ok) return when;
  const target = targetFields(schedule);
  if (!target.ok) return target;

  const body: Record<string, unknown> = { ...when.fields, target: target.target };
  if (target.payload !== undefined) body.payload = target.payload;
  const recurring = !("runAt" in when.fields);
  if (recurring) {
    const startAt = latest(when.startAt, schedule.StartDate?.getTime());
    const endAt = earliest(when.endAt, schedule.EndDate?.getTime());
    if (startAt !== undefined) body.startAt = iso(startAt);
    if (endAt !== undefined) body.endAt = iso(endAt);
    if (endAt !== undefined && endAt <= now) return refuse("its end date has passed: it will not run again");
  }
  const window = schedule.FlexibleTimeWindow;
  if (window?.Mode === "FLEXIBLE" && window.MaximumWindowInMinutes) {
    body.jitter = `PT${window.MaximumWindowInMinutes}M`;
  }
  const retry = schedule.Target?.RetryPolicy;
  if (retry?.MaximumRetryAttempts !== undefined) {
    body.maxAttempts = Math.min(MAX_ATTEMPTS, retry.MaximumRetryAttempts + 1);
    if (retry.MaximumRetryAttempts + 1 > MAX_ATTEMPTS) {
      notes.push(`${retry.MaximumRetryAttempts} retries cut to ${MAX_ATTEMPTS - 1} (jobsched's most)`);
    }
  }
  if (retry?.MaximumEventAgeInSeconds !== undefined) body.maxLateness = retry.MaximumEventAgeInSeconds;
  if (schedule.Target?.DeadLetterConfig?.Arn) {
    notes.push(
      `dead letters stay in jobsched (jobsched dlq list), not in ${schedule.Target.DeadLetterConfig.Arn}`,
    );
  }
  if (schedule.ActionAfterCompletion === "DELETE") {
    notes.push("ActionAfterCompletion DELETE: jobsched keeps the completed job and its history");
  }
  body.labels = {
    "eventbridge-group": schedule.GroupName ?? "default",
    "eventbridge-schedule": schedule.Name ?? "",
  };
  // The schedule's ARN: a second import finds the job the first one made.
  if (schedule.Arn) body.idempotencyKey = schedule.Arn;
  return { ok: true, body, paused: schedule.State === "DISABLED", notes };
}

type Fields =
  | {
      readonly ok: true;
      readonly fields: Record<string, unknown>;
      readonly startAt?: number | undefined;
      readonly endAt?: number | undefined;
    }
  | { readonly ok: false; readonly reason: string };

function scheduleFields(expression: string, timeZone: string, now: number): Fields {
  const at = AT.exec(expression);
  if (at) {
    const instant = DateTime.fromISO(at[1] ?? "", { zone: timeZone });
    if (!instant.isValid) return refuse(`${expression}: not a valid date and time`);
    if (instant.toMillis() <= now) return refuse(`${expression} has passed: it will not run`);
    return { ok: true, fields: { runAt: iso(instant.toMillis()) } };
  }
  const rate = RATE.exec(expression);
  if (rate) {
    const amount = Number(rate[1]);
    if (amount < 1) return refuse(`${expression}: the rate must be at least 1`);
    const unit = (rate[2] ?? "m").charAt(0);
    return { ok: true, fields: { interval: { every: `${amount}${unit}` } } };
  }
  const cron = CRON.exec(expression);
  if (cron) return cronFields(cron[1] ?? "", timeZone, expression);
  return refuse(`${expression || "(no expression)"}: not at(), rate() or cron()`);
}

function cronFields(text: string, timeZone: string, expression: string): Fields {
  const parts = text.trim().split(/\s+/);
  if (parts.length !== 6) return refuse(`${expression}: AWS cron has six fields, this has ${parts.length}`);
  const [minute, hour, dayOfMonth, month, dayOfWeek, year] = parts as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  if (/W/i.test(dayOfMonth)) return refuse(`${expression}: W (nearest weekday) has no jobsched equivalent`);
  const weekday = vixieDayOfWeek(dayOfWeek);
  if (weekday === undefined) return refuse(`${expression}: day-of-week ${dayOfWeek} cannot be converted`);
  const years = yearBounds(year, timeZone);
  if (!years) return refuse(`${expression}: the year ${year} is not *, one year, or a range of years`);
  const dom = dayOfMonth === "?" ? "*" : dayOfMonth;
  return {
    ok: true,
    fields: { cron: [minute, hour, dom, month, weekday].join(" "), timeZone, dstPolicy: "skip-gap" },
    startAt: years.startAt,
    endAt: years.endAt,
  };
}

const AWS_WEEKDAY_NAMES = /^[A-Z]{3}$/i;

/** AWS's day-of-week (1-7 = SUN-SAT, names, ranges, lists, `#`, `L`) as Vixie's (0-6). */
export function vixieDayOfWeek(field: string): string | undefined {
  if (field === "?" || field === "*") return "*";
  const day = (value: string): string | undefined => {
    if (AWS_WEEKDAY_NAMES.test(value)) return value.toUpperCase();
    if (!/^[1-7]$/.test(value)) return undefined;
    return String(Number(value) - 1);
  };
  const items = field.split(",").map((item) => {
    const nth = /^([^#]+)#([1-5])$/.exec(item);
    if (nth) {
      const d = day(nth[1] ?? "");
      return d === undefined ? undefined : `${d}#${nth[2]}`;
    }
    const last = /^(.+)L$/.exec(item);
    if (last) {
      const d = day(last[1] ?? "");
      return d === undefined ? undefined : `${d}L`;
    }
    const [range, step] = item.split("/");
    if (step !== undefined && !/^\d+$/.test(step)) return undefined;
    const bounds = (range ?? "").split("-");
    if (bounds.length > 2) return undefined;
    const converted = bounds.map((b) => (b === "*" && bounds.length === 1 ? "*" : day(b)));
    if (converted.some((c) => c === undefined)) return undefined;
    return `${converted.join("-")}${step === undefined ? "" : `/${step}`}`;
  });
  return items.some((i) => i === undefined) ? undefined : items.join(",");
}

function yearBounds(year: string, timeZone: string): { startAt?: number; endAt?: number } | undefined {
  if (year === "*" || year === "?") return {};
  const match = /^(\d{4})(?:-(\d{4}))?$/.exec(year);
  if (!match) return undefined;
  const first = Number(match[1]);
  const last = Number(match[2] ?? match[1]);
  if (last < first) return undefined;
  return {
    startAt: DateTime.fromObject({ year: first, month: 1, day: 1 }, { zone: timeZone }).toMillis(),
    endAt: DateTime.fromObject(
      { year: last, month: 12, day: 31, hour: 23, minute: 59, second: 59 },
      { zone: timeZone },
    ).toMillis(),
  };
}

type TargetFields =
  | { readonly ok: true; readonly target: Record<string, unknown>; readonly payload: unknown }
  | { readonly ok: false; readonly reason: string };

const LAMBDA_ARN = /^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:/;
const SQS_ARN = /^arn:(aws[a-z-]*):sqs:([a-z0-9-]+):(\d{12}):([A-Za-z0-9_-]+(\.fifo)?)$/;

function targetFields(schedule: GetScheduleCommandOutput): TargetFields {
  const target = schedule.Target;
  if (!target?.Arn || !target.RoleArn) return refuse("it has no target or no execution role");
  const payload = payloadOf(target.Input);
  if (LAMBDA_ARN.test(target.Arn)) {
    return {
      ok: true,
      // EventBridge Scheduler invokes asynchronously: accepted is delivered, however long it runs.
      target: { kind: "lambda", functionArn: target.Arn, roleArn: target.RoleArn, invocation: "async" },
      payload,
    };
  }
  const sqs = SQS_ARN.exec(target.Arn);
  if (sqs) {
    const [, partition, region, account, name] = sqs;
    const host = partition === "aws-cn" ? `sqs.${region}.amazonaws.com.cn` : `sqs.${region}.amazonaws.com`;
    return {
      ok: true,
      target: { kind: "sqs", queueUrl: `https://${host}/${account}/${name}`, roleArn: target.RoleArn },
      payload,
    };
  }
  const service = target.Arn.split(":")[2] ?? "unknown";
  return refuse(`its target is ${service} (${target.Arn}); jobsched pushes to Lambda, SQS and https only`);
}

/** EventBridge passes Input as it is: JSON becomes the payload, other text a string payload. */
function payloadOf(input: string | undefined): unknown {
  if (input === undefined) return undefined;
  try {
    return JSON.parse(input);
  } catch {
    return input;
  }
}

function refuse(reason: string): { ok: false; reason: string } {
  return { ok: false, reason };
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(".000Z", "Z");
}

function latest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.max(a, b);
}

function earliest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}
