import { Hash } from "@smithy/hash-node";
import { HttpRequest } from "@smithy/protocol-http";
import { SignatureV4 } from "@smithy/signature-v4";
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from "@smithy/types";
import { bodyOf, type JsonResponse, type TransportRequest, urlOf } from "./transport.js";

/**
 * fetch() with AWS Signature Version 4 for API Gateway ("execute-api"), as the jobsched API
 * requires in AWS and the local runtime checks the same way. The client's transport from Node,
 * and the worker SDK's (which shares it); any SigV4 client (curl --aws-sigv4, awscurl, the AWS
 * SDKs) works as well.
 */
export interface SignedFetchOptions {
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  /**
   * How often a `429` (a tenant quota, the API's throttle) is tried again after its
   * `Retry-After` (at most MAX_RETRY_AFTER_SECONDS; 1 s when absent). Default 3; 0 hands it back.
   */
  readonly throttleRetries?: number;
}

/** The longest Retry-After a call waits out; a longer one is handed back to the caller. */
export const MAX_RETRY_AFTER_SECONDS = 10;

export function createSignedFetch(options: SignedFetchOptions) {
  const signer = new SignatureV4({
    service: "execute-api",
    region: options.region,
    credentials: options.credentials,
    sha256: Hash.bind(null, "sha256"),
    // Sign x-amz-content-sha256 only if the client did: API Gateway does not require it (curl omits it).
    applyChecksum: false,
  });
  const base = new URL(options.endpoint);

  return async function signedFetch(
    method: string,
    path: string,
    init: TransportRequest = {},
  ): Promise<JsonResponse> {
    const url = urlOf(base.href, path, init.query);
    const query = Object.fromEntries(url.searchParams);
    const body = init.body === undefined ? undefined : JSON.stringify(init.body);
    const request = new HttpRequest({
      method,
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port ? Number(url.port) : undefined,
      path: url.pathname,
      query,
      headers: {
        ...init.headers,
        host: url.host,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body,
    });
    let response: Response;
    for (let retries = options.throttleRetries ?? 3; ; retries--) {
      // Signed again each time: a signature is only good for a few minutes.
      const signed = await signer.sign(request);
      response = await fetch(url, { method, headers: signed.headers, body, signal: init.signal });
      const wait = Number(response.headers.get("retry-after") ?? "1");
      if (response.status !== 429 || retries <= 0 || !(wait <= MAX_RETRY_AFTER_SECONDS)) break;
      await response.arrayBuffer(); // let the connection go back to the pool
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, wait) * 1000 + Math.random() * 250));
    }
    return { status: response.status, body: await bodyOf(response), headers: response.headers };
  };
}

export type SignedFetch = ReturnType<typeof createSignedFetch>;
