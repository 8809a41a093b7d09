import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { type DestinationRules, destinationProblem } from "../../core/destination-rules";
import type { DeliveryResult, RunEnvelope } from "../../core/target";
import { guardedLookup, PRIVATE_DESTINATION } from "./guarded-lookup";
import { retryAfterSeconds } from "./retry-after";
import { webhookSignature } from "./webhook-signature";

/** The most of an answer's body read (for the error it names); the rest is not read. */
export const MAX_RESPONSE_BYTES = 64 * 1024;
const ERROR_EXCERPT_CHARS = 512;

export interface HttpsTargetOptions {
  /** The secrets that sign a tenant's deliveries now (the current one, and the previous in its grace). */
  readonly secretsOf: (tenant: string) => Promise<readonly string[]>;
  /** Where it may connect: in AWS public https on allowed ports; locally, private and http too. */
  readonly rules: DestinationRules;
  readonly now: () => number;
}

/**
 * POSTs a run's envelope to a webhook, signed per Standard Webhooks (`webhook-id` is the run
 * key, the same for every attempt, so a receiver can drop a repeat), with the run key, fence
 * and attempt as headers. 2xx is success; 408, 425, 429 and 5xx fail retryably (honouring
 * Retry-After); redirects are not followed and fail for good, as other 4xx do; a timeout or
 * a network error fails retryably. Only MAX_RESPONSE_BYTES of an answer are read. In AWS the
 * URL's scheme, literal address and port are checked again (destinationProblem), and a name's
 * connection goes only to public addresses, checked on the resolved addresses connected to
 * (guarded-lookup.ts).
 */
export async function deliverWebhook(
  url: string,
  envelope: RunEnvelope,
  context: { readonly tenant: string; readonly timeoutMs: number },
  options: HttpsTargetOptions,
): Promise<DeliveryResult> {
  const target = new URL(url);
  const refused = destinationProblem(target, options.rules);
  if (refused) return { ok: false, retryable: false, error: `destination refused: target.url ${refused}` };
  const secrets = await options.secretsOf(context.tenant);
  if (secrets.length === 0) {
    return {
      ok: false,
      retryable: false,
      error: "no webhook secret to sign with: create one (POST /api/v1/webhook-secret), then replay",
    };
  }
  const body = JSON.stringify(envelope);
  const timestamp = Math.floor(options.now() / 1000);
  const headers = {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
    "user-agent": "jobsched-dispatcher",
    "webhook-id": envelope.runKey,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": webhookSignature(secrets, envelope.runKey, timestamp, body),
    "jobsched-run-key": envelope.runKey,
    "jobsched-fence": String(envelope.fence),
    "jobsched-attempt": String(envelope.attempt),
  };
  try {
    const answer = await post(target, headers, body, context.timeoutMs, options.rules.allowPrivate);
    return resultOf(answer, options.now());
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === PRIVATE_DESTINATION) {
      return { ok: false, retryable: false, error: `destination refused: ${(error as Error).message}` };
    }
    return { ok: false, retryable: true, error: `${target.origin}: ${(error as Error).message}` };
  }
}

interface Answer {
  readonly status: number;
  readonly retryAfter: string | undefined;
  readonly location: string | undefined;
  readonly excerpt: string;
}

function post(
  url: URL,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  allowPrivate: boolean,
): Promise<Answer> {
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<Answer>((resolve, reject) => {
    const request = send(
      url,
      {
        method: "POST",
        headers,
        signal: AbortSignal.timeout(timeoutMs),
        ...(allowPrivate ? {} : { lookup: guardedLookup }),
      },
      (response) => {
        readExcerpt(response).then(
          (excerpt) =>
            resolve({
              status: response.statusCode ?? 0,
              retryAfter: headerOf(response, "retry-after"),
              location: headerOf(response, "location"),
              excerpt,
            }),
          reject,
        );
      },
    );
    request.on("error", (error) =>
      reject(error.name === "AbortError" ? new Error(`no answer within ${timeoutMs} ms`) : error),
    );
    request.end(body);
  });
}

/** The first MAX_RESPONSE_BYTES of the body (the rest is never read: the socket is dropped). */
function readExcerpt(response: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => resolve(Buffer.concat(chunks).toString("utf8", 0, Math.min(size, MAX_RESPONSE_BYTES)));
    response.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= MAX_RESPONSE_BYTES) {
        response.destroy();
        done();
      }
    });
    response.on("end", done);
    response.on("error", done);
    response.on("aborted", done);
  });
}

function headerOf(response: IncomingMessage, name: string): string | undefined {
  const value = response.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** What an answer means for the run: success, a retry (when, if the endpoint said), or the end. */
export function resultOf(answer: Answer, now: number): DeliveryResult {
  const { status } = answer;
  if (status >= 200 && status < 300) return { ok: true };
  const said = answer.excerpt.trim().slice(0, ERROR_EXCERPT_CHARS);
  const error = `endpoint answered ${status}${said === "" ? "" : `: ${said}`}`;
  if (status === 408 || status === 425 || status === 429 || status >= 500) {
    return {
      ok: false,
      retryable: true,
      error,
      retryAfterSeconds: retryAfterSeconds(answer.retryAfter, now),
    };
  }
  if (status >= 300 && status < 400) {
    return {
      ok: false,
      retryable: false,
      error: `endpoint answered ${status} (redirect to ${answer.location ?? "nowhere"}, not followed): give the final URL`,
    };
  }
  return { ok: false, retryable: false, error };
}
