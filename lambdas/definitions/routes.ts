/**
 * The HTTP routes and the Lambda function that serves each. The CDK API construct creates one
 * IAM-authorised route per entry; the local runtime's HTTP server matches requests against the
 * same list and builds the event API Gateway would send (routeKey, pathParameters).
 */
export type FunctionName = "api" | "internal";

export interface RouteDefinition {
  readonly method: "GET" | "POST" | "PATCH" | "DELETE";
  /** API Gateway path template, e.g. /api/v1/jobs/{jobId}. */
  readonly path: string;
  readonly function: FunctionName;
}

export const ROUTES = [
  { method: "POST", path: "/api/v1/jobs", function: "api" },
  { method: "POST", path: "/api/v1/jobs/batch", function: "api" },
  { method: "GET", path: "/api/v1/jobs", function: "api" },
  { method: "GET", path: "/api/v1/jobs/{jobId}", function: "api" },
  { method: "PATCH", path: "/api/v1/jobs/{jobId}", function: "api" },
  { method: "DELETE", path: "/api/v1/jobs/{jobId}", function: "api" },
  { method: "GET", path: "/api/v1/jobs/{jobId}/runs", function: "api" },
  { method: "POST", path: "/api/v1/jobs/{jobId}/pause", function: "api" },
  { method: "POST", path: "/api/v1/jobs/{jobId}/resume", function: "api" },
  { method: "POST", path: "/api/v1/jobs/{jobId}/trigger", function: "api" },
  { method: "POST", path: "/api/v1/jobs/{jobId}/backfill", function: "api" },
  { method: "GET", path: "/api/v1/schedules/preview", function: "api" },
  { method: "GET", path: "/api/v1/openapi.json", function: "api" },
  { method: "GET", path: "/api/v1/dead-letters", function: "api" },
  { method: "POST", path: "/api/v1/dead-letters/replay", function: "api" },
  { method: "POST", path: "/api/v1/dead-letters/{runId}/replay", function: "api" },
  { method: "POST", path: "/api/v1/webhook-secret", function: "api" },
  { method: "GET", path: "/api/v1/webhook-secret", function: "api" },
  { method: "POST", path: "/internal/leases", function: "internal" },
  { method: "POST", path: "/internal/leases/{runId}/heartbeat", function: "internal" },
  { method: "POST", path: "/internal/leases/{runId}/complete", function: "internal" },
  { method: "POST", path: "/internal/completions", function: "internal" },
  { method: "POST", path: "/internal/heartbeats", function: "internal" },
  { method: "POST", path: "/internal/lanes", function: "internal" },
] as const satisfies readonly RouteDefinition[];

export type RouteKey = `${(typeof ROUTES)[number]["method"]} ${(typeof ROUTES)[number]["path"]}`;

export function routeKeyOf(route: RouteDefinition): string {
  return `${route.method} ${route.path}`;
}
