import { describe, expect, it } from "vitest";
import { checkResponse } from "../support/response-contract";

/** The check every integration test's API answers go through (test/support/response-contract.ts). */
const answer = (statusCode: number, body: unknown) => ({ statusCode, body: JSON.stringify(body) });
const run = {
  runId: "r_1",
  runKey: "j_1@2026-11-02T09:00:00.000Z",
  scheduledFor: "2026-11-02T09:00:00.000Z",
  status: "pending",
  attempt: 0,
  fence: 0,
};

describe("checkResponse", () => {
  it("accepts a body the document describes", () => {
    expect(() => checkResponse("GET /api/v1/jobs/{jobId}/runs", answer(200, { runs: [run] }))).not.toThrow();
    expect(() =>
      checkResponse("POST /api/v1/jobs", answer(400, { error: { code: "ValidationError", message: "no" } })),
    ).not.toThrow();
  });

  it("refuses a field the document does not name, a wrong type, a missing field, an unlisted status", () => {
    expect(() =>
      checkResponse("GET /api/v1/jobs/{jobId}/runs", answer(200, { runs: [{ ...run, secret: "x" }] })),
    ).toThrow(/must NOT have additional properties/);
    expect(() =>
      checkResponse("GET /api/v1/jobs/{jobId}/runs", answer(200, { runs: [{ ...run, fence: "0" }] })),
    ).toThrow(/fence must be integer/);
    const { runKey: _dropped, ...withoutKey } = run;
    expect(() => checkResponse("GET /api/v1/jobs/{jobId}/runs", answer(200, { runs: [withoutKey] }))).toThrow(
      /must have required property 'runKey'/,
    );
    expect(() => checkResponse("GET /api/v1/jobs/{jobId}/runs", answer(418, {}))).toThrow(
      /a status its OpenAPI description does not list/,
    );
  });
});
