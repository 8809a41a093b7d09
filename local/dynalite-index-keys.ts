import { createRequire } from "node:module";

/**
 * dynalite 4 files an index entry under the index key plus six hex characters of an MD5 of
 * the table key, so two items with the same index key (jobs due at the same millisecond, runs
 * with one check time) overwrite each other's entry about once in 16 million pairs: at
 * thousands of items per key the sweep or the repair pass loses one. DynamoDB has no such
 * limit. patches/dynalite+4.0.0.patch (applied by `npm ci` through patch-package) appends the
 * whole table key; this check refuses to start an emulator without it, since the failure it
 * prevents is silent.
 */
interface KeySchemaElement {
  readonly AttributeName: string;
  readonly KeyType: "HASH" | "RANGE";
}
interface DynaliteDb {
  createIndexKey(
    item: Record<string, { S: string }>,
    table: {
      KeySchema: KeySchemaElement[];
      AttributeDefinitions: { AttributeName: string; AttributeType: "S" }[];
    },
    keySchema: KeySchemaElement[],
  ): string;
}

export function assertDynaliteIndexKeysWhole(): void {
  const fromDynalite = createRequire(createRequire(import.meta.url).resolve("dynalite"));
  const db = fromDynalite("./db/index.js") as DynaliteDb;
  const table = {
    KeySchema: [{ AttributeName: "pk", KeyType: "HASH" as const }],
    AttributeDefinitions: [
      { AttributeName: "pk", AttributeType: "S" as const },
      { AttributeName: "g", AttributeType: "S" as const },
    ],
  };
  const key = db.createIndexKey({ pk: { S: "jobsched" }, g: { S: "x" } }, table, [
    { AttributeName: "g", KeyType: "HASH" },
  ]);
  if (!key.endsWith(Buffer.from("jobsched").toString("hex"))) {
    throw new Error(
      "dynalite is not patched (patches/dynalite+4.0.0.patch): its index entries can overwrite each other. Run `npm ci` (or `npx patch-package`) to apply the patch.",
    );
  }
}
