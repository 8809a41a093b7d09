import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { NotFoundError } from "../../core/errors";
import type { HttpEvent } from "./request";

export type RouteHandler = (event: HttpEvent) => Promise<APIGatewayProxyStructuredResultV2>;

/**
 * Dispatches on API Gateway's routeKey ("POST /api/v1/jobs"), which the API construct and the
 * local server both derive from definitions/routes.ts.
 */
export function dispatch(routes: Readonly<Record<string, RouteHandler>>): RouteHandler {
  return async (event) => {
    const route = routes[event.routeKey];
    if (!route) throw new NotFoundError(`no route ${event.routeKey}`);
    return route(event);
  };
}
