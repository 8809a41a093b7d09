import type { Server } from "node:http";
import { createSignedFetch, type SignedFetch } from "@jobsched/worker";
import { createApiHandler } from "../../lambdas/handlers/api";
import { createInternalHandler } from "../../lambdas/handlers/internal";
import { startHttpGateway } from "../../local/http-gateway";
import { loadLocalCredentials } from "../../local/local-credentials";
import { contractChecked } from "./response-contract";
import type { TestStack } from "./stack";

/**
 * The real handlers behind the local gateway (SigV4 checked), on a test stack, with a signed
 * client for each dev principal: what the integration tests call the API through. Every
 * handler answer is checked against the OpenAPI document (response-contract.ts): `close()`
 * throws if one did not match.
 */
export interface TestApi {
  readonly url: string;
  readonly tenantA: SignedFetch;
  readonly tenantB: SignedFetch;
  /** The dev worker bound to tenant A. */
  readonly worker: SignedFetch;
  /** The dev worker bound to tenant B. */
  readonly workerB: SignedFetch;
  /** The dev pool worker, serving tenants A and B. */
  readonly pool: SignedFetch;
  close(): Promise<void>;
}

/** `throttleRetries: 0` hands a 429 back to the test instead of waiting it out. */
export async function startTestApi(
  stack: TestStack,
  options: { readonly throttleRetries?: number } = {},
): Promise<TestApi> {
  const credentials = loadLocalCredentials();
  // Every answer checked against the OpenAPI document; close() fails the test file on a mismatch.
  const mismatches: string[] = [];
  const { server, url } = await startHttpGateway(
    {
      api: contractChecked(createApiHandler(stack.deps), mismatches),
      internal: contractChecked(createInternalHandler(stack.deps), mismatches),
    },
    { port: 0, credentials },
  );
  const client = (accessKeyId: string) => {
    const credential = credentials.byAccessKey.get(accessKeyId);
    if (!credential) throw new Error(`no dev credential ${accessKeyId}`);
    return createSignedFetch({
      endpoint: url,
      region: credentials.region,
      credentials: credential,
      ...(options.throttleRetries === undefined ? {} : { throttleRetries: options.throttleRetries }),
    });
  };
  const [a, b] = [...credentials.byAccessKey.values()].filter((c) => c.kind === "tenant");
  return {
    url,
    tenantA: client(a?.accessKeyId ?? ""),
    tenantB: client(b?.accessKeyId ?? ""),
    worker: client("AKIAJOBSCHEDWORKER01"),
    workerB: client("AKIAJOBSCHEDWORKERB1"),
    pool: client("AKIAJOBSCHEDPOOL0001"),
    close: async () => {
      await closeServer(server);
      if (mismatches.length > 0) {
        throw new Error(`responses the OpenAPI document does not describe:\n${mismatches.join("\n")}`);
      }
    },
  };
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((done) => server.close(() => done()));
}
