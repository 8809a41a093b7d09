import { RemovalPolicy } from "aws-cdk-lib";
import { AttributeType, Billing, ProjectionType, TableV2 } from "aws-cdk-lib/aws-dynamodb";
import { Construct } from "constructs";
import { JOBS_TABLE, type KeyAttribute } from "../../../lambdas/definitions/table";

const attribute = (key: KeyAttribute) => ({
  name: key.name,
  type: key.type === "S" ? AttributeType.STRING : AttributeType.NUMBER,
});

/**
 * The jobs table, built from lambdas/definitions/table.ts (the same definition the local
 * runtime creates). On-demand, point-in-time recovery, and retained when the stack is deleted:
 * accepted jobs must outlive a careless `cdk destroy`.
 */
export class JobsTable extends Construct {
  readonly table: TableV2;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.table = new TableV2(this, "Table", {
      partitionKey: attribute(JOBS_TABLE.partitionKey),
      sortKey: attribute(JOBS_TABLE.sortKey),
      billing: Billing.onDemand(),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
      timeToLiveAttribute: JOBS_TABLE.timeToLiveAttribute,
      globalSecondaryIndexes: JOBS_TABLE.indexes.map((index) => ({
        indexName: index.name,
        partitionKey: attribute(index.partitionKey),
        sortKey: attribute(index.sortKey),
        ...(index.projectedAttributes.length === 0
          ? { projectionType: ProjectionType.KEYS_ONLY }
          : { projectionType: ProjectionType.INCLUDE, nonKeyAttributes: [...index.projectedAttributes] }),
      })),
    });
  }
}
