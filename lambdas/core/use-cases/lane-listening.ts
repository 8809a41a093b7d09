import type { LaneListenResponse } from "@jobsched/contract";
import { laneListenRequest } from "@jobsched/contract";
import type { WorkerCaller } from "../caller";
import type { Clock } from "../clock";
import { formatInstant } from "../instant";
import type { LaneListening } from "../lane-listening-ports";
import type { TenantQuotas } from "../ports";
import { parseWith } from "../validation";

/**
 * At most this many lanes (tenants served x types asked for) per listening worker: each is one
 * long poll every 20 s while idle, and the session policy that names them must fit STS's 2,048
 * characters (about 80 a lane). A worker with more polls the lease route as before.
 */
export const LISTEN_MAX_LANES = 16;

/**
 * A worker's peek leaves the message it saw visible: the lease request it makes at once (the
 * rung lane polled first) takes it. Hiding it, even for a second, would let the other
 * listeners' waiting polls take it from the lease step when it showed again, round after
 * round. Each peek still counts toward the lane's redrive limit, so the SDK peeks a lane at most
 * once a second (its cool-down), and the lease step sends a fresh copy of a message received
 * RECYCLE_AFTER_RECEIVES times.
 */
export const PEEK_VISIBILITY_SECONDS = 0;

/**
 * Where an idle worker waits for work without holding a request open (decision 0049): the
 * lanes of every tenant it serves for every type it asks for (made now if missing, so a
 * tenant's first run of a type finds a listener), and credentials that may only receive from
 * them. The worker long-polls them in SQS for free while idle and asks POST /internal/leases
 * when one holds a message; the lease step stays the one place that grants a lease.
 */
export async function grantLaneListening(
  deps: {
    readonly lanes: LaneListening;
    readonly quotas: Pick<TenantQuotas, "admitType">;
    readonly clock: Clock;
  },
  worker: WorkerCaller,
  body: unknown,
): Promise<LaneListenResponse> {
  const request = parseWith(laneListenRequest, body);
  const types = [...new Set(request.types)];
  const pairs = worker.tenants.flatMap((tenant) => types.map((type) => ({ tenant, type })));
  if (pairs.length > LISTEN_MAX_LANES) {
    return {
      lanes: [],
      reason: `${pairs.length} lanes (tenants served x types), more than the ${LISTEN_MAX_LANES} a worker may listen on: poll POST /internal/leases`,
    };
  }
  const refusal = deps.lanes.refusal(pairs);
  if (refusal !== undefined) return { lanes: [], reason: refusal };
  // A lane is a queue of the tenant's own: a type no job has used yet counts in its types
  // quota, as a create of it would (decision 0016); over the quota, that lane is not listened on.
  const admitted = await Promise.all(pairs.map((p) => deps.quotas.admitType(p.tenant, p.type)));
  const refused = pairs.filter((_, i) => !admitted[i]?.admitted);
  const within = pairs.filter((_, i) => admitted[i]?.admitted);
  const over =
    refused.length === 0
      ? undefined
      : `not listening on ${refused.map((p) => `${p.tenant}/${p.type}`).join(", ")}: the tenant's job-types quota is full`;
  if (within.length === 0) return { lanes: [], reason: over ?? "no lanes" };
  const lanes = await deps.lanes.open(within, request.gone);
  const access = await deps.lanes.access(
    lanes.map((lane) => lane.queueUrl),
    request.workerId,
    deps.clock.now(),
  );
  if (!access.granted) return { lanes: [], reason: access.reason };
  return {
    lanes,
    ...(over === undefined ? {} : { reason: over }),
    listen: {
      region: access.region,
      ...(access.endpoint === undefined ? {} : { endpoint: access.endpoint }),
      credentials: access.credentials,
      expiresAt: formatInstant(access.expiresAt),
      peekVisibilitySeconds: PEEK_VISIBILITY_SECONDS,
    },
  };
}
