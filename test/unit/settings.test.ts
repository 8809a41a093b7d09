import { describe, expect, it } from "vitest";
import { configFromEnvironment } from "../../lambdas/adapters/environment";
import {
  CLOUD_SETTINGS,
  envNameOf,
  LOCAL_SETTINGS,
  SETTING_KEYS,
  settingsEnvironment,
  settingsFrom,
} from "../../lambdas/definitions/settings";

/** The one settings schema, as the Lambdas, the CDK app and the local runtime read it (issue 16). */
const base = { TABLE_NAME: "t", RUN_QUEUE_URL: "https://q/runs", SWEEP_QUEUE_URL: "https://q/sweeps" };

describe("the settings schema", () => {
  it("names each setting's variable after the setting", () => {
    expect(envNameOf("tickSeconds")).toBe("TICK_SECONDS");
    expect(envNameOf("tenantMaxJobTypes")).toBe("TENANT_MAX_JOB_TYPES");
    expect(new Set(SETTING_KEYS.map(envNameOf)).size).toBe(SETTING_KEYS.length);
  });

  it("carries every setting from the stack's environment to the Lambdas unchanged", () => {
    const tuned = { ...CLOUD_SETTINGS, leaseSeconds: 45, idleLaneDays: 0, maxPayloadBytes: 1_000 };
    expect(configFromEnvironment({ ...base, ...settingsEnvironment(tuned) }).settings).toEqual(tuned);
    expect(configFromEnvironment(base).settings).toEqual(CLOUD_SETTINGS);
  });

  it("keeps the lookahead long enough for a sweep period and the delivery lead, and within SQS's longest delay", () => {
    const cloud = (values: Record<string, string>) => () =>
      settingsFrom(
        (key) => values[key],
        CLOUD_SETTINGS,
        (key) => `context jobsched:${key}`,
      );
    // A group swept every 120 s: a run just past one sweep's horizon is found 120 s later and
    // needs its 5 s lead and a second for the rounding.
    expect(cloud({ lookaheadSeconds: "126" })().lookaheadSeconds).toBe(126);
    expect(cloud({ lookaheadSeconds: "125" })).toThrow(/context jobsched:lookaheadSeconds: must be at least/);
    expect(cloud({ sweepEveryTicks: "1", lookaheadSeconds: "66" })().lookaheadSeconds).toBe(66);
    expect(cloud({ lookaheadSeconds: "900" })().lookaheadSeconds).toBe(900);
    expect(cloud({ lookaheadSeconds: "901" })).toThrow(
      /context jobsched:lookaheadSeconds: must be at most 900/,
    );
  });

  it("takes defaults for what is not set, and refuses bad values naming them as their source does", () => {
    expect(settingsFrom(() => undefined, LOCAL_SETTINGS, envNameOf)).toEqual(LOCAL_SETTINGS);
    const values: Record<string, string> = {
      leaseSeconds: "0",
      maxPayloadBytes: "300000",
      tenantMaxJobTypes: "1.5",
      idleLaneDays: "soon",
    };
    const read = (key: string) => values[key];
    expect(() => settingsFrom(read, CLOUD_SETTINGS, (key) => `context jobsched:${key}`)).toThrow(
      /context jobsched:leaseSeconds: must be at least 1.*context jobsched:maxPayloadBytes: must be at most 262144.*context jobsched:tenantMaxJobTypes: must be a whole number.*context jobsched:idleLaneDays: must be a number/,
    );
    expect(() =>
      configFromEnvironment({ ...base, RETRY_BASE_SECONDS: "60", RETRY_CAP_SECONDS: "30" }),
    ).toThrow(/jobsched is misconfigured: RETRY_CAP_SECONDS: must not be less than retryBaseSeconds/);
  });

  it("reads webhookPorts as a list, from comma-separated text or an array, and refuses a bad port", () => {
    expect(CLOUD_SETTINGS.webhookPorts).toEqual([443]);
    const wider = { ...CLOUD_SETTINGS, webhookPorts: [443, 8443] };
    expect(settingsEnvironment(wider).WEBHOOK_PORTS).toBe("443,8443");
    expect(configFromEnvironment({ ...base, ...settingsEnvironment(wider) }).settings).toEqual(wider);
    const context = (value: string) => (key: string) => (key === "webhookPorts" ? value : undefined);
    expect(settingsFrom(context(" 443 , 8443"), CLOUD_SETTINGS, envNameOf).webhookPorts).toEqual([443, 8443]);
    for (const [text, problem] of [
      ["0", /WEBHOOK_PORTS: must be at least 1/],
      ["443,70000", /WEBHOOK_PORTS: must be at most 65535/],
      ["https", /WEBHOOK_PORTS: must be a number/],
      ["443,", /WEBHOOK_PORTS: must be at least 1/],
    ] as const) {
      expect(() => settingsFrom(context(text), CLOUD_SETTINGS, envNameOf), text).toThrow(problem);
    }
  });

  it("reads TENANT_MAPPING with the same rules as the stack", () => {
    const mapping = { "arn:aws:iam::123456789012:role/cron": "billing" };
    expect(configFromEnvironment({ ...base, TENANT_MAPPING: JSON.stringify(mapping) }).tenantMapping).toEqual(
      mapping,
    );
    expect(() => configFromEnvironment({ ...base, TENANT_MAPPING: '{"not-an-arn": "x"}' })).toThrow(
      /TENANT_MAPPING "not-an-arn": must be an IAM principal ARN/,
    );
  });
});
