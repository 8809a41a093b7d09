import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROUTES } from "../../lambdas/definitions/routes";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { createTestStack } from "../support/stack";

/** The served OpenAPI document describes every route, and every route answers as it says. */
interface Document {
  openapi: string;
  paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
}

let api: TestApi;
let doc: Document;

beforeAll(async () => {
  api = await startTestApi(await createTestStack("openapi"));
  const response = await api.tenantA("GET", "/api/v1/openapi.json");
  expect(response.status).toBe(200);
  doc = response.body as Document;
});
afterAll(() => api.close());

describe("the OpenAPI document", () => {
  it("is OpenAPI 3.1 and lists exactly the routes the API serves", () => {
    expect(doc.openapi).toBe("3.1.0");
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(documented.sort()).toEqual(ROUTES.map((r) => `${r.method} ${r.path}`).sort());
  });

  it("documents the status each route answers with", async () => {
    const fake = "j_00000000000000000000";
    for (const route of ROUTES) {
      const path = route.path.replace("{jobId}", fake).replace("{runId}", "r_00000000000000000000_1");
      const as = route.path.startsWith("/internal/") ? api.worker : api.tenantA;
      const body = route.method === "POST" ? {} : undefined;
      const response = await as(route.method, path, { body });
      const documented = Object.keys(doc.paths[route.path]?.[route.method.toLowerCase()]?.responses ?? {});
      expect(documented, `${route.method} ${route.path} answered ${response.status}`).toContain(
        String(response.status),
      );
    }
  });
});
