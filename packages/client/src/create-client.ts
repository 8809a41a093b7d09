import { fromNodeProviderChain } from "@aws-sdk/credential-providers";
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from "@smithy/types";
import { type ClientOptions, JobschedClient } from "./client.js";
import type { RetryOptions } from "./retry.js";
import { createSignedFetch } from "./signed-fetch.js";

export interface CreateClientOptions {
  /** The API's base URL: the stack's ApiUrl output, or http://127.0.0.1:8787 for `npm start`. */
  readonly endpoint: string;
  /** The region to sign for (default AWS_REGION, else us-east-1). */
  readonly region?: string;
  /** Credentials or a provider; default the standard AWS chain (environment, profile, SSO, roles). */
  readonly credentials?: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  /** A named profile for the standard chain, when `credentials` is not given. */
  readonly profile?: string;
  readonly retry?: RetryOptions;
  /** For tests: the wait between tries and the jitter's random numbers. */
  readonly sleep?: ClientOptions["sleep"];
  readonly random?: ClientOptions["random"];
}

/** A client whose requests are signed with SigV4 (IAM auth), as the API requires. */
export function createClient(options: CreateClientOptions): JobschedClient {
  const credentials =
    options.credentials ?? fromNodeProviderChain(options.profile ? { profile: options.profile } : {});
  // The client's own retries decide about 429s; the transport hands every answer back.
  const transport = createSignedFetch({
    endpoint: options.endpoint,
    region: options.region ?? process.env.AWS_REGION ?? "us-east-1",
    credentials,
    throttleRetries: 0,
  });
  return new JobschedClient({
    transport,
    ...(options.retry ? { retry: options.retry } : {}),
    ...(options.sleep ? { sleep: options.sleep } : {}),
    ...(options.random ? { random: options.random } : {}),
  });
}
