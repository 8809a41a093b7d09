import { Hash } from "@smithy/hash-node";
import { HttpRequest } from "@smithy/protocol-http";
import { SignatureV4 } from "@smithy/signature-v4";
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from "@smithy/types";

/**
 * fetch() with AWS Signature Version 4 for API Gateway ("execute-api"), as the jobsched API
 * requires in AWS and the local runtime checks the same way. Used by the CLI and the example
 * worker; any SigV4 client (curl --aws-sigv4, awscurl, the AWS SDKs) works as well.
 */
export interface SignedFetchOptions {
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: AwsCredentialIdentity | AwsCredentialIdentityProvider;
}

export interface JsonResponse {
  readonly status: number;
  readonly body: unknown;
}

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
    init: { body?: unknown; query?: Record<string, string | undefined>; signal?: AbortSignal } = {},
  ): Promise<JsonResponse> {
    const url = new URL(path.replace(/^\//, ""), base.href.endsWith("/") ? base.href : `${base.href}/`);
    const query: Record<string, string> = {};
    for (const [name, value] of Object.entries(init.query ?? {})) {
      if (value !== undefined) {
        query[name] = value;
        url.searchParams.set(name, value);
      }
    }
    const body = init.body === undefined ? undefined : JSON.stringify(init.body);
    const request = new HttpRequest({
      method,
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port ? Number(url.port) : undefined,
      path: url.pathname,
      query,
      headers: {
        host: url.host,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body,
    });
    const signed = await signer.sign(request);
    const response = await fetch(url, {
      method,
      headers: signed.headers,
      body,
      signal: init.signal,
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text === "" ? undefined : JSON.parse(text);
    } catch {
      // not JSON: hand back the text
    }
    return { status: response.status, body: parsed };
  };
}

export type SignedFetch = ReturnType<typeof createSignedFetch>;
