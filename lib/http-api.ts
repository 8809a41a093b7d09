import { CfnOutput } from "aws-cdk-lib";
import { HttpApi, HttpMethod } from "aws-cdk-lib/aws-apigatewayv2";
import { HttpIamAuthorizer } from "aws-cdk-lib/aws-apigatewayv2-authorizers";
import { HttpLambdaIntegration } from "aws-cdk-lib/aws-apigatewayv2-integrations";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import { Construct } from "constructs";
import { type FunctionName, ROUTES } from "../lambdas/definitions/routes";

/**
 * The HTTPS API: an API Gateway HTTP API (a third of the REST API's price per request, and it
 * supports IAM auth) with one IAM-authorised route per entry of definitions/routes.ts.
 */
export class SchedulerHttpApi extends Construct {
  readonly api: HttpApi;

  constructor(scope: Construct, id: string, functions: Readonly<Record<FunctionName, IFunction>>) {
    super(scope, id);
    this.api = new HttpApi(this, "Api", {
      description: "jobsched: schedule jobs and lease their runs (IAM / SigV4 auth)",
      defaultAuthorizer: new HttpIamAuthorizer(),
      createDefaultStage: true,
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
    new CfnOutput(this, "Url", { value: this.api.apiEndpoint, description: "Base URL of the jobsched API" });
  }
}
