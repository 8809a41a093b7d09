import {
  GetScheduleCommand,
  type GetScheduleCommandOutput,
  paginateListSchedules,
  type SchedulerClient,
} from "@aws-sdk/client-scheduler";
import { convertSchedule } from "./eventbridge-schedule";

/** A signed call to the jobsched API, answering its status and body (as the worker SDK's). */
export type ApiCall = (
  method: string,
  path: string,
  init?: { body?: unknown },
) => Promise<{ readonly status: number; readonly body: unknown }>;

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
  api: ApiCall,
  options: { readonly group?: string | undefined; readonly dryRun?: boolean; readonly now: () => number },
): Promise<ImportRow[]> {
  const rows: ImportRow[] = [];
  for await (const page of paginateListSchedules(
    { client: scheduler },
    options.group ? { GroupName: options.group } : {},
  )) {
    for (const summary of page.Schedules ?? []) {
      const schedule = await scheduler.send(
        new GetScheduleCommand({ Name: summary.Name, GroupName: summary.GroupName }),
      );
      rows.push(await importOne(schedule, api, options.dryRun === true, options.now()));
    }
  }
  return rows;
}

async function importOne(
  schedule: GetScheduleCommandOutput,
  api: ApiCall,
  dryRun: boolean,
  now: number,
): Promise<ImportRow> {
  const row = { group: schedule.GroupName ?? "default", name: schedule.Name ?? "" };
  const conversion = convertSchedule(schedule, now);
  if (!conversion.ok) return { ...row, result: "not-converted", reason: conversion.reason };
  const { body, paused, notes } = conversion;
  if (dryRun) return { ...row, result: "would-create", paused, notes };
  const created = await api("POST", "/api/v1/jobs", { body });
  if (created.status !== 200 && created.status !== 201) {
    return { ...row, result: "failed", reason: messageOf(created.body), notes };
  }
  const jobId = (created.body as { jobId: string }).jobId;
  if (paused) {
    // Also on a second import, should the first have stopped between its create and its pause.
    const job = await api("GET", `/api/v1/jobs/${encodeURIComponent(jobId)}`);
    if ((job.body as { status?: string }).status === "active") {
      const pause = await api("POST", `/api/v1/jobs/${encodeURIComponent(jobId)}/pause`, {
        body: { reason: "imported disabled from EventBridge Scheduler" },
      });
      if (pause.status !== 200)
        return { ...row, result: "failed", jobId, reason: messageOf(pause.body), notes };
    }
  }
  return { ...row, result: created.status === 201 ? "created" : "exists", jobId, paused, notes };
}

function messageOf(body: unknown): string {
  const error = (body as { error?: { message?: string; field?: string } } | undefined)?.error;
  return error?.message ?? JSON.stringify(body);
}
