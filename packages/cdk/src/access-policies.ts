import { CfnOutput } from "aws-cdk-lib";
import { Effect, ManagedPolicy, PolicyStatement } from "aws-cdk-lib/aws-iam";
import { Construct } from "constructs";
import type { SchedulerHttpApi } from "./http-api";

/**
 * The two kinds of caller, as managed policies to attach to roles: tenant clients may call
 * only /api/*, workers only /internal/*. The tenant is the calling principal (README).
 *
 * The tenant policy also denies /internal/* outright, so that a tenant role that some broader
 * policy (PowerUserAccess, say) lets invoke anything still cannot reach the lease protocol. The
 * lease function refuses any principal without a worker binding as well (decision 0013).
 */
export class AccessPolicies extends Construct {
  readonly tenant: ManagedPolicy;
  readonly worker: ManagedPolicy;

  constructor(scope: Construct, id: string, http: SchedulerHttpApi, outputs = false) {
    super(scope, id);
    this.tenant = new ManagedPolicy(this, "Tenant", {
      description: "jobsched tenant client: schedule and control jobs (/api/*)",
      statements: [
        new PolicyStatement({ actions: ["execute-api:Invoke"], resources: [http.routesArn("api")] }),
        new PolicyStatement({
          sid: "TenantsNeverCallTheLeaseProtocol",
          effect: Effect.DENY,
          actions: ["execute-api:Invoke"],
          resources: [http.routesArn("internal")],
        }),
      ],
    });
    this.worker = new ManagedPolicy(this, "Worker", {
      description: "jobsched worker: lease, heartbeat and complete runs (/internal/*)",
      statements: [
        new PolicyStatement({ actions: ["execute-api:Invoke"], resources: [http.routesArn("internal")] }),
      ],
    });
    if (outputs) {
      new CfnOutput(this, "TenantPolicyArn", { value: this.tenant.managedPolicyArn });
      new CfnOutput(this, "WorkerPolicyArn", { value: this.worker.managedPolicyArn });
    }
  }
}
