import type { AcceptedJob, Delivery, JobSettings } from "./chaos-events";

/**
 * Which overlapPolicy and delivery a crash-loop job had when: the create's, then each PATCH's.
 * A change takes effect somewhere between its request's sending and its answer, and a lease
 * step that read the job a moment before records its decision with the instant it began, so
 * each setting counts as in force from SETTINGS_EDGE_MS before it was sent to SETTINGS_EDGE_MS
 * after the next one was answered: around a PATCH, either is legitimate.
 */
export const SETTINGS_EDGE_MS = 10_000;

/** The mix's at-most-once payload kind (the one-off jobs created at-most-once). */
export const AT_MOST_ONCE_KIND = "at-most-once";

/** The job's settings over time (a job created with none recorded: allow, and its kind's delivery). */
export function jobSettings(job: AcceptedJob): readonly JobSettings[] {
  if (job.settings && job.settings.length > 0) return job.settings;
  const delivery: Delivery = job.kind === AT_MOST_ONCE_KIND ? "at-most-once" : "at-least-once";
  return [{ overlapPolicy: "allow", delivery, sentAt: job.createdSentAt, answeredAt: job.createdSentAt }];
}

/** The settings in force at some instant of [from, to]. */
export function settingsDuring(job: AcceptedJob, from: number, to: number = from): JobSettings[] {
  const all = jobSettings(job);
  return all.filter((setting, i) => {
    const start = setting.sentAt - SETTINGS_EDGE_MS;
    const end = (all[i + 1]?.answeredAt ?? Number.POSITIVE_INFINITY) + SETTINGS_EDGE_MS;
    return start <= to && from <= end;
  });
}

/** Whether the job was at-most-once at some instant of [from, to]. */
export function atMostOnceDuring(job: AcceptedJob, from: number, to: number = from): boolean {
  return settingsDuring(job, from, to).some((s) => s.delivery === "at-most-once");
}

/** Whether the job was at-most-once throughout [from, to] (no at-least-once setting then). */
export function onlyAtMostOnceDuring(job: AcceptedJob, from: number, to: number): boolean {
  const during = settingsDuring(job, from, to);
  return during.length > 0 && during.every((s) => s.delivery === "at-most-once");
}

/**
 * A short label for the report: the kind, with its policies and deliveries when it has an
 * overlap policy or changed one by PATCH (`overlap [skip>buffer-one, at-most-once]`).
 */
export function settingsLabel(job: AcceptedJob): string {
  const all = jobSettings(job);
  const changes = (values: string[]) => values.filter((v, i) => v !== values[i - 1]).join(">");
  const policies = changes(all.map((s) => s.overlapPolicy));
  const deliveries = changes(all.map((s) => s.delivery));
  const plain = policies === "allow" && !deliveries.includes(">");
  return plain ? job.kind : `${job.kind} [${policies}, ${deliveries}]`;
}
