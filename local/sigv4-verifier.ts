import { createHash, timingSafeEqual } from "node:crypto";
import { Hash } from "@smithy/hash-node";
import { HttpRequest } from "@smithy/protocol-http";
import { SignatureV4 } from "@smithy/signature-v4";
import type { LocalCredential, LocalCredentials } from "./local-credentials";

/**
 * Checks an AWS Signature Version 4 the way API Gateway's IAM authorizer does, for the local
 * runtime: the signature is computed again with @smithy/signature-v4 from the request as it
 * arrived (method, path, query, the headers the client signed, the body) and compared. The
 * answers mirror API Gateway's 403 messages.
 */
export const MAX_CLOCK_SKEW_MS = 5 * 60_000;

export type Verdict =
  | { readonly ok: true; readonly credential: LocalCredential }
  | { readonly ok: false; readonly message: string };

export interface IncomingSigned {
  readonly method: string;
  /** The path exactly as sent, before percent-decoding. */
  readonly rawPath: string;
  readonly query: URLSearchParams;
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

const AUTH =
  /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request,\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]{64})$/;

function amzDate(text: string | undefined): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text ?? "");
  if (!m) return undefined;
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
}

export async function verifySigV4(
  request: IncomingSigned,
  credentials: LocalCredentials,
  now: number,
): Promise<Verdict> {
  const authorization = request.headers.authorization;
  if (!authorization) return { ok: false, message: "Missing Authentication Token" };
  const parts = AUTH.exec(authorization.trim());
  if (!parts)
    return {
      ok: false,
      message: "Authorization header requires a valid SigV4 Credential, SignedHeaders and Signature",
    };
  const [, accessKeyId, day, region, service, signedHeaderList, signature] = parts as unknown as string[];

  const credential = credentials.byAccessKey.get(accessKeyId ?? "");
  if (!credential) return { ok: false, message: "The security token included in the request is invalid." };
  if (region !== credentials.region || service !== "execute-api") {
    return {
      ok: false,
      message: `Credential should be scoped to a valid region and service: ${credentials.region}/execute-api`,
    };
  }
  const signedAt = amzDate(request.headers["x-amz-date"]);
  if (signedAt === undefined || new Date(signedAt).toISOString().slice(0, 10).replaceAll("-", "") !== day) {
    return { ok: false, message: "Signature date is missing or does not match the credential scope" };
  }
  if (Math.abs(now - signedAt) > MAX_CLOCK_SKEW_MS) {
    return { ok: false, message: "Signature expired: the request was signed more than 5 minutes from now" };
  }

  const signedHeaders = (signedHeaderList ?? "").split(";");
  if (!signedHeaders.includes("host")) return { ok: false, message: "The host header must be signed" };
  // A client may send the body's hash in x-amz-content-sha256; the signer below would take that
  // header's word for it, so it must be the hash of the body that arrived.
  const claimedHash = request.headers["x-amz-content-sha256"];
  if (claimedHash !== undefined && claimedHash !== createHash("sha256").update(request.body).digest("hex")) {
    return {
      ok: false,
      message: "The x-amz-content-sha256 header is not the SHA-256 of the request body",
    };
  }
  const headers: Record<string, string> = {};
  for (const name of signedHeaders) headers[name] = request.headers[name] ?? "";
  const query: Record<string, string | string[]> = {};
  for (const name of new Set(request.query.keys())) {
    const values = request.query.getAll(name);
    query[name] = values.length === 1 ? (values[0] as string) : values;
  }

  const signer = new SignatureV4({
    service: "execute-api",
    region: credentials.region,
    credentials: { accessKeyId: credential.accessKeyId, secretAccessKey: credential.secretAccessKey },
    sha256: Hash.bind(null, "sha256"),
    // Sign x-amz-content-sha256 only if the client did: API Gateway does not require it (curl omits it).
    applyChecksum: false,
  });
  const resigned = await signer.sign(
    new HttpRequest({
      method: request.method,
      hostname: (headers.host ?? "").split(":")[0] ?? "",
      path: decodeURIComponentSafe(request.rawPath),
      query,
      headers,
      body: request.body.length > 0 ? request.body.toString("utf8") : undefined,
    }),
    { signingDate: new Date(signedAt), signableHeaders: new Set(signedHeaders) },
  );
  const expected = /Signature=([0-9a-f]{64})/.exec(String(resigned.headers.authorization))?.[1] ?? "";
  const matches =
    expected.length === (signature ?? "").length &&
    timingSafeEqual(Buffer.from(expected), Buffer.from(signature ?? ""));
  return matches
    ? { ok: true, credential }
    : {
        ok: false,
        message:
          "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.",
      };
}

/** SignatureV4 escapes the path itself; hand it the decoded form (raw if it does not decode). */
function decodeURIComponentSafe(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}
