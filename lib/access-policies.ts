import { CfnOutput } from "aws-cdk-lib";
import { ManagedPolicy, PolicyStatement } from "aws-cdk-lib/aws-iam";
import { Construct } from "constructs";
import type { SchedulerHttpApi } from "./http-api";

/**
 * The two kinds of caller, as managed policies to attach to roles: tenant clients may call
 * only /api/*, workers only /internal/*. The tenant is the calling principal (README).
 */
export class AccessPolicies extends Construct {
  readonly tenant: ManagedPolicy;
  readonly worker: ManagedPolicy;

  constructor(scope: Construct, id: string, http: SchedulerHttpApi) {
    super(scope, id);
    this.tenant = new ManagedPolicy(this, "Tenant", {
      description: "jobsched tenant client: schedule and control jobs (/api/*)",
      statements: [
        new PolicyStatement({ actions: ["execute-api:Invoke"], resources: [http.routesArn("api")] }),
      ],
    });
    this.worker = new ManagedPolicy(this, "Worker", {
      description: "jobsched worker: lease, heartbeat and complete runs (/internal/*)",
      statements: [
        new PolicyStatement({ actions: ["execute-api:Invoke"], resources: [http.routesArn("internal")] }),
      ],
    });
    new CfnOutput(this, "TenantPolicyArn", { value: this.tenant.managedPolicyArn });
    new CfnOutput(this, "WorkerPolicyArn", { value: this.worker.managedPolicyArn });
  }
}
