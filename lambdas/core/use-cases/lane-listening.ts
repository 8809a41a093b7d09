import type { LaneListenResponse } from "@jobsched/contract";
import type { WorkerCaller } from "../caller";
import type { Clock } from "../clock";
import { formatInstant } from "../instant";
import type { LaneListening } from "../ports";
import { laneListenRequest } from "../schemas";
import { parseWith } from "../validation";

/**
 * At most this many lanes (tenants served x types asked for) per listening worker: each is one
 * long poll every 20 s while idle, and the session policy that names them must fit STS's 2,048
 * characters (about 80 a lane). A worker with more polls the lease route as before.
 */
export const LISTEN_MAX_LANES = 16;

/**
 * A worker's peek hides the message it saw for this long. It then asks for a lease, whose
 * receive takes the message when it shows again. A peek of 0 s would leave it visible to every
 * other listener at once, and each receive counts toward the lane's redrive limit: one second
 * bounds the peeks' count to one a second per message, far under RECYCLE_AFTER_RECEIVES.
 */
export const PEEK_VISIBILITY_SECONDS = 1;

/**
 * Where an idle worker waits for work without holding a request open (decision 0049): the
 * lanes of every tenant it serves for every type it asks for (made now if missing, so a
 * tenant's first run of a type finds a listener), and credentials that may only receive from
 * them. The worker long-polls them in SQS for free while idle and asks POST /internal/leases
 * when one holds a message; the lease step stays the one place that grants a lease.
 */
export async function grantLaneListening(
  deps: { readonly lanes: LaneListening; readonly clock: Clock },
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
  const lanes = await deps.lanes.open(pairs, request.gone);
  const access = await deps.lanes.access(
    lanes.map((lane) => lane.queueUrl),
    request.workerId,
    deps.clock.now(),
  );
  if (!access.granted) return { lanes: [], reason: access.reason };
  return {
    lanes,
    listen: {
      region: access.region,
      ...(access.endpoint === undefined ? {} : { endpoint: access.endpoint }),
      credentials: access.credentials,
      expiresAt: formatInstant(access.expiresAt),
      peekVisibilitySeconds: PEEK_VISIBILITY_SECONDS,
    },
  };
}
