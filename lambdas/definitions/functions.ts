/**
 * Memory of each Lambda function, in MB: the CDK stack sets it and bench-cost prices
 * GB-seconds with it. The worker-facing function (leases, heartbeats, completions) waits on
 * DynamoDB and SQS and never holds a response until a due instant (decision 0014): 256 MB
 * leave it ~3x headroom over what it uses and halve its GB-seconds. The others parse and plan
 * (zod, cron, time zones) and keep 512 MB for the CPU that comes with it.
 */
export const FUNCTION_MEMORY_MB = {
  api: 512,
  internal: 256,
  tick: 512,
  sweeper: 512,
  // Waits on the network (targets, DynamoDB, SQS); its CPU work is JSON and one HMAC a run.
  dispatcher: 256,
} as const;

/**
 * Timeout of each Lambda function, in seconds. The HTTP functions stop a second before API
 * Gateway's 30 s; the tick and the sweeper get a minute (a sweep of a dense group writes for a
 * while). The sweep queue's visibility is derived from the sweeper's (definitions/queues.ts).
 */
export const FUNCTION_TIMEOUT_SECONDS = {
  api: 29,
  internal: 29,
  tick: 60,
  sweeper: 60,
  // The longest target timeout (30 s) after a lead's hold, with room for the writes after it.
  dispatcher: 60,
} as const;

/**
 * The dispatcher's event source scales to this many concurrent batches of 10 push runs, in AWS
 * and on the local runtime alike: its share of the account's concurrency at a spike.
 */
export const DISPATCHER_MAX_CONCURRENCY = 200;

/**
 * What one tenant may hold in a dispatcher process (core/tenant-shares.ts, decision 0039): the
 * runs of three quarters of the event source's batches, ten to a batch (what a flood fills);
 * every dispatch while it is alone (a spike of one tenant fills them thinly, a few runs each,
 * and one given back over its share would start seconds late), three quarters of them while
 * another tenant holds runs, whose runs may come a few to a dispatch. It binds only where one
 * process runs many dispatches (the local runtime); a Lambda instance runs one at a time.
 */
export const TENANT_SHARE = {
  runs: (DISPATCHER_MAX_CONCURRENCY * 10 * 3) / 4,
  dispatches: DISPATCHER_MAX_CONCURRENCY,
  dispatchesBeside: (DISPATCHER_MAX_CONCURRENCY * 3) / 4,
} as const;
