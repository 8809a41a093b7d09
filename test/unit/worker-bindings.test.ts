import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { configFromEnvironment } from "../../lambdas/adapters/environment";
import {
  MAX_TENANTS_PER_WORKER,
  parseWorkerBindings,
  serializeWorkerBindings,
} from "../../lambdas/definitions/worker-bindings";
import { loadLocalCredentials, widestWorker } from "../../local/local-credentials";

const ROLE = "arn:aws:iam::123456789012:role/billing-worker";

describe("worker bindings", () => {
  it("reads an object or its JSON text, and writes it back the same", () => {
    const bindings = parseWorkerBindings(`{"${ROLE}": ["billing", "reports"]}`, "ctx");
    expect(bindings.get(ROLE)).toEqual(["billing", "reports"]);
    expect(parseWorkerBindings(JSON.parse(serializeWorkerBindings(bindings)), "ctx")).toEqual(bindings);
    expect(parseWorkerBindings("", "ctx").size).toBe(0);
    expect(parseWorkerBindings({}, "ctx").size).toBe(0);
  });

  it("refuses what an operator could get wrong, naming where and what", () => {
    const refuse = (input: unknown) => () => parseWorkerBindings(input, "ctx");
    expect(refuse({ [ROLE]: [] })).toThrow(`ctx "${ROLE}": names no tenant`);
    expect(refuse({ [ROLE]: ["a", "a"] })).toThrow(/lists a tenant twice/);
    expect(refuse({ [ROLE]: ["  "] })).toThrow(/must not be empty/);
    expect(refuse({ [ROLE]: "billing" })).toThrow(`ctx "${ROLE}"`);
    expect(refuse({ worker: ["billing"] })).toThrow(/ctx "worker": must be an IAM principal ARN/);
    expect(refuse({ [ROLE]: Array.from({ length: MAX_TENANTS_PER_WORKER + 1 }, (_, i) => `t${i}`) })).toThrow(
      /more than 100 tenants/,
    );
    expect(refuse("[1, 2")).toThrow(/ctx: not valid JSON/);
    expect(refuse(["x"])).toThrow(/^ctx/);
  });
});

describe("the local credentials file", () => {
  const write = (credentials: unknown[]) => {
    const file = join(mkdtempSync(join(tmpdir(), "jobsched-creds-")), "credentials.json");
    writeFileSync(file, JSON.stringify({ region: "us-east-1", credentials }));
    return file;
  };
  const tenant = {
    accessKeyId: "AKIATESTTENANT000001",
    secretAccessKey: "secret-tenant",
    principal: "arn:aws:iam::000000000000:role/t",
    kind: "tenant",
  };
  const worker = {
    accessKeyId: "AKIATESTWORKER000001",
    secretAccessKey: "secret-worker",
    principal: "arn:aws:iam::000000000000:role/w",
    kind: "worker",
    tenants: ["arn:aws:iam::000000000000:role/t"],
  };

  it("gives the runtime its workers' bindings, and the widest worker for the example", () => {
    const pool = {
      ...worker,
      accessKeyId: "AKIATESTWORKER000002",
      principal: "arn:aws:iam::000000000000:role/p",
    };
    const loaded = loadLocalCredentials(write([tenant, worker, { ...pool, tenants: ["a", "b"] }]));
    expect(loaded.workerBindings.get(worker.principal)).toEqual(worker.tenants);
    expect(widestWorker(loaded).principal).toBe(pool.principal);
  });

  it("stops the start on a worker that serves no tenant, or lists none, or a tenant that lists some", () => {
    expect(() => loadLocalCredentials(write([tenant, { ...worker, tenants: [] }]))).toThrow(
      /names no tenant/,
    );
    const { tenants: _, ...bare } = worker;
    expect(() => loadLocalCredentials(write([tenant, bare]))).toThrow(/tenants/);
    expect(() => loadLocalCredentials(write([{ ...tenant, tenants: ["x"] }]))).toThrow(/tenants/);
  });

  it("ships dev workers for tenant A, tenant B and a pool of both", () => {
    const dev = loadLocalCredentials();
    const tenants = [...dev.byAccessKey.values()].filter((c) => c.kind === "tenant").map((c) => c.principal);
    const bound = [...dev.workerBindings.values()];
    expect(bound).toEqual(expect.arrayContaining([[tenants[0]], [tenants[1]], tenants]));
  });
});

describe("the lease function's configuration", () => {
  const base = { TABLE_NAME: "t", RUN_QUEUE_URL: "https://q/runs", SWEEP_QUEUE_URL: "https://q/sweeps" };

  it("reads WORKER_BINDINGS, and none means no worker may lease", () => {
    const config = configFromEnvironment({ ...base, WORKER_BINDINGS: `{"${ROLE}": ["billing"]}` });
    expect(config.workerBindings?.get(ROLE)).toEqual(["billing"]);
    expect(configFromEnvironment(base).workerBindings?.size).toBe(0);
  });

  it("refuses to start on bindings that are not valid, naming the problem", () => {
    expect(() => configFromEnvironment({ ...base, WORKER_BINDINGS: `{"${ROLE}": []}` })).toThrow(
      /jobsched is misconfigured: WORKER_BINDINGS: WORKER_BINDINGS ".*": names no tenant/,
    );
    expect(() => configFromEnvironment({ ...base, WORKER_BINDINGS: "{" })).toThrow(
      /WORKER_BINDINGS: not valid JSON/,
    );
  });
});
