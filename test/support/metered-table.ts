import type { TableDefinition } from "../../lambdas/definitions/table";

/**
 * A table for the capacity tests: two indexes keeping different attributes, so one write can
 * touch one, both or neither (by-due keeps `status`, by-tenant keeps `plan`).
 */
export const METERED_TABLE: TableDefinition = {
  logicalName: "meter",
  timeToLiveAttribute: "ttl",
  partitionKey: { name: "pk", type: "S" },
  sortKey: { name: "sk", type: "S" },
  indexes: [
    {
      name: "by-due",
      partitionKey: { name: "dueKey", type: "S" },
      sortKey: { name: "dueAt", type: "N" },
      projectedAttributes: ["status"],
    },
    {
      name: "by-tenant",
      partitionKey: { name: "tenant", type: "S" },
      sortKey: { name: "createdAt", type: "N" },
      projectedAttributes: ["plan"],
    },
  ],
};
