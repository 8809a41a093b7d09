/**
 * AWS limits the design must stay inside. The local emulators enforce few of them, so the code
 * checks them itself (and local/sqs-aws-limits.ts holds the local SQS client to SQS's rules).
 */

/** SQS DelaySeconds: 0 to 900. */
export const MAX_DELAY_SECONDS = 900;

/**
 * SQS visibility timeouts go up to 12 hours, and a message's visibility can never reach past
 * 12 hours after the receive that hid it: ChangeMessageVisibility is refused beyond that.
 */
export const MAX_VISIBILITY_SECONDS = 43_200;

/**
 * What the lease step asks of SQS at most right after a receive: the limit less a minute, so
 * that the seconds between the receive and the change can never carry it past 12 hours.
 */
export const SAFE_VISIBILITY_SECONDS = MAX_VISIBILITY_SECONDS - 60;

/**
 * Lambda's synchronous response limit, as its error reports it ("exceeded maximum allowed
 * payload size (6291556 bytes)"): the serialized API Gateway result, body escaped inside it.
 */
export const LAMBDA_RESPONSE_LIMIT_BYTES = 6_291_556;

/** API Gateway HTTP APIs give an integration 30 s (29 s usable). */
export const API_GATEWAY_TIMEOUT_MS = 29_000;
