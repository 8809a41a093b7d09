import {
  GetScheduleCommand,
  type GetScheduleCommandOutput,
  paginateListSchedules,
  type SchedulerClient,
} from "@aws-sdk/client-scheduler";
import { type CreateJobInput, type JobschedClient, JobschedError } from "@jobsched/client";
import { convertSchedule } from "./eventbridge-schedule";

export interface ImportRow {
  readonly group: string;
  readonly name: string;
  /** created, already imported, would be created (--dry-run), or not converted. */
  readonly result: "created" | "exists" | "would-create" | "not-converted" | "failed";
  readonly jobId?: string | undefined;
  readonly paused?: boolean;
  /** Why it was not converted (or the API's refusal); notes on what changed in the conversion. */
  readonly reason?: string | undefined;
  readonly notes?: readonly string[];
}

/**
 * `jobsched import eventbridge-scheduler`: reads the account's schedules (ListSchedules, then
 * GetSchedule for each; one group with `group`), and creates a job per schedule it can convert
 * (eventbridge-schedule.ts), with the schedule's ARN as the idempotency key, so running it
 * again creates nothing. A disabled schedule's job is paused. Nothing is written to
 * EventBridge: the schedules are only read.
 */
export async function importSchedules(
  scheduler: SchedulerClient,
  api: JobschedClient,
  options: {
    readonly group?: string | undefined;
    readonly dryRun?: boolean;
    readonly now: () => number;
    /** Once the schedules are listed, with how many there are; then after each, with the rows so far. */
    readonly onListed?: (count: number) => void;
    readonly onRow?: (rows: readonly ImportRow[]) => void;
  },
): Promise<ImportRow[]> {
  // Listed first (a page of 100 names a request), so that progress can show a total.
  const summaries: Array<{ Name?: string | undefined; GroupName?: string | undefined }> = [];
  for await (const page of paginateListSchedules(
    { client: scheduler },
    options.group ? { GroupName: options.group } : {},
  )) {
    summaries.push(...(page.Schedules ?? []));
  }
  options.onListed?.(summaries.length);
  const rows: ImportRow[] = [];
  for (const summary of summaries) {
    const schedule = await scheduler.send(
      new GetScheduleCommand({ Name: summary.Name, GroupName: summary.GroupName }),
    );
    rows.push(await importOne(schedule, api, options.dryRun === true, options.now()));
    options.onRow?.(rows);
  }
  return rows;
}

async function importOne(
  schedule: GetScheduleCommandOutput,
  api: JobschedClient,
  dryRun: boolean,
  now: number,
): Promise<ImportRow> {
  const row = { group: schedule.GroupName ?? "default", name: schedule.Name ?? "" };
  const conversion = convertSchedule(schedule, now);
  if (!conversion.ok) return { ...row, result: "not-converted", reason: conversion.reason };
  const { body, paused, notes } = conversion;
  if (dryRun) return { ...row, result: "would-create", paused, notes };
  let created: Awaited<ReturnType<JobschedClient["createJob"]>>;
  try {
    created = await api.createJob(body as CreateJobInput);
  } catch (error) {
    if (error instanceof JobschedError) return { ...row, result: "failed", reason: error.message, notes };
    throw error;
  }
  const { jobId } = created;
  if (paused) {
    try {
      // Also on a second import, should the first have stopped between its create and its pause.
      if ((await api.getJob(jobId)).status === "active")
        await api.pauseJob(jobId, { reason: "imported disabled from EventBridge Scheduler" });
    } catch (error) {
      if (error instanceof JobschedError)
        return { ...row, result: "failed", jobId, reason: error.message, notes };
      throw error;
    }
  }
  return { ...row, result: created.created ? "created" : "exists", jobId, paused, notes };
}
