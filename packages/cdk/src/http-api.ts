import { CfnOutput, RemovalPolicy } from "aws-cdk-lib";
import { HttpApi, HttpMethod, HttpStage, LogGroupLogDestination } from "aws-cdk-lib/aws-apigatewayv2";
import { HttpIamAuthorizer } from "aws-cdk-lib/aws-apigatewayv2-authorizers";
import { HttpLambdaIntegration } from "aws-cdk-lib/aws-apigatewayv2-integrations";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import { LogGroup, type RetentionDays } from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import { type FunctionName, ROUTES } from "../../../lambdas/definitions/routes";
import type { StackLimits } from "./stack-limits";

/**
 * The HTTPS API: an API Gateway HTTP API (a third of the REST API's price per request, and it
 * supports IAM auth) with one IAM-authorised route per entry of definitions/routes.ts.
 */
export class SchedulerHttpApi extends Construct {
  readonly api: HttpApi;

  constructor(
    scope: Construct,
    id: string,
    functions: Readonly<Record<FunctionName, IFunction>>,
    limits: Pick<StackLimits, "logRetentionDays" | "apiRateLimit" | "apiBurstLimit">,
    /** A stack output with the API's URL (the stand-alone app's; JobSchedulerProps.outputs). */
    outputs = false,
  ) {
    super(scope, id);
    this.api = new HttpApi(this, "Api", {
      description: "jobsched: schedule jobs and lease their runs (IAM / SigV4 auth)",
      defaultAuthorizer: new HttpIamAuthorizer(),
      createDefaultStage: false,
    });
    // The default stage, with an access log: who called what, when, and the answer.
    const accessLog = new LogGroup(this, "AccessLog", {
      retention: limits.logRetentionDays as RetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    new HttpStage(this, "DefaultStage", {
      httpApi: this.api,
      stageName: "$default",
      autoDeploy: true,
      accessLogSettings: { destination: new LogGroupLogDestination(accessLog) },
      // Past this API Gateway answers 429 before any function runs (packages/cdk/src/stack-limits.ts).
      throttle: { rateLimit: limits.apiRateLimit, burstLimit: limits.apiBurstLimit },
    });
    const integrations = {
      api: new HttpLambdaIntegration("ApiIntegration", functions.api),
      internal: new HttpLambdaIntegration("InternalIntegration", functions.internal),
    };
    for (const route of ROUTES) {
      this.api.addRoutes({
        path: route.path,
        methods: [HttpMethod[route.method]],
        integration: integrations[route.function],
      });
    }
    if (outputs)
      new CfnOutput(this, "Url", {
        value: this.api.apiEndpoint,
        description: "Base URL of the jobsched API",
      });
  }

  /** The ARN pattern of the API's routes under `prefix` (`api` or `internal`), for execute-api:Invoke. */
  routesArn(prefix: "api" | "internal"): string {
    return this.api.arnForExecuteApi("*", `/${prefix}/*`);
  }
}
