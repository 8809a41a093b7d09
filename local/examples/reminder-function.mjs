/**
 * An example `lambda` target for `npm start` (registered in local/functions.json): Lambda would
 * call it with the run's envelope. Throwing fails the attempt (it is retried with backoff).
 */
export async function handler(envelope) {
  console.log(
    `example function: run ${envelope.runKey} (fence ${envelope.fence}) payload ${JSON.stringify(envelope.payload)}`,
  );
  return { ok: true };
}
