import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";

/**
 * Counts the DynamoDB capacity a client consumes: asks for ReturnConsumedCapacity on every call
 * and adds up what comes back, split into reads and writes. One middleware, so no adapter call
 * can be missed. Used by the benchmarks; dynalite reports capacity like DynamoDB does.
 */
export interface CapacityMeter {
  readonly reads: () => number;
  readonly writes: () => number;
  readonly calls: () => Readonly<Record<string, number>>;
  reset(): void;
}

const READS = new Set(["GetItemCommand", "QueryCommand", "ScanCommand", "BatchGetItemCommand"]);

interface Consumed {
  CapacityUnits?: number;
}

export function meterCapacity(client: DynamoDBClient): CapacityMeter {
  let reads = 0;
  let writes = 0;
  let calls: Record<string, number> = {};
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity ??= "TOTAL";
      const result = await next(args);
      const output = result.output as { ConsumedCapacity?: Consumed | Consumed[] };
      const consumed = [output.ConsumedCapacity ?? []]
        .flat()
        .reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);
      const name = context.commandName ?? "unknown";
      calls[name] = (calls[name] ?? 0) + 1;
      if (READS.has(name)) reads += consumed;
      else writes += consumed;
      return result;
    },
    { step: "initialize", name: "jobschedCapacityMeter" },
  );
  return {
    reads: () => reads,
    writes: () => writes,
    calls: () => ({ ...calls }),
    reset: () => {
      reads = 0;
      writes = 0;
      calls = {};
    },
  };
}
