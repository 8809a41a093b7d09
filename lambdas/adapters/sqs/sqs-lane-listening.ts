import { AssumeRoleCommand, type STSClient } from "@aws-sdk/client-sts";
import type { LaneListening, ListenAccess, ListenedLane } from "../../core/lane-listening-ports";
import type { LaneDirectory } from "./lane-directory";
import { laneListenPolicy } from "./lane-listen-policy";

/** How a deployment hands out listening credentials: STS in AWS, the emulator's locally. */
export type ListenCredentialSource =
  | { readonly kind: "role"; readonly roleArn: string; readonly sts: STSClient; readonly region: string }
  | { readonly kind: "local"; readonly endpoint: string; readonly region: string }
  | { readonly kind: "none" };

/**
 * Credentials live an hour: the most STS gives a role assumed from another role's session
 * (role chaining). The worker asks again before they lapse, which also marks its lanes used.
 */
const SESSION_SECONDS = 3_600;

const NO_ROLE = "this deployment has no lane listener role: poll POST /internal/leases";
const TOO_LONG = "the lanes' session policy passes STS's limit: poll POST /internal/leases";
const partitionOf = (arn: string) => arn.split(":")[1] ?? "aws";

/** The emulator's documented dummy credentials (loopback only; clients.ts uses the same). */
const LOCAL_CREDENTIALS = { accessKeyId: "local", secretAccessKey: "local" };

/** Lanes from the lane directory; credentials by the deployment's source (decision 0049). */
export class SqsLaneListening implements LaneListening {
  constructor(
    private readonly lanes: Pick<LaneDirectory, "laneFor" | "forgetIfGone" | "laneName">,
    private readonly source: ListenCredentialSource,
  ) {}

  open(
    pairs: ReadonlyArray<{ readonly tenant: string; readonly type: string }>,
    gone: readonly string[],
  ): Promise<ListenedLane[]> {
    if (gone.length > 0) this.lanes.forgetIfGone(pairs, gone);
    return Promise.all(
      pairs.map(async ({ tenant, type }) => ({
        tenant,
        type,
        queueUrl: await this.lanes.laneFor(tenant, type),
      })),
    );
  }

  refusal(pairs: ReadonlyArray<{ readonly tenant: string; readonly type: string }>): string | undefined {
    const source = this.source;
    if (source.kind === "none") return NO_ROLE;
    if (source.kind === "local") return undefined;
    const names = pairs.map(({ tenant, type }) => this.lanes.laneName(tenant, type));
    return laneListenPolicy(partitionOf(source.roleArn), names) === undefined ? TOO_LONG : undefined;
  }

  async access(queueUrls: readonly string[], sessionName: string, now: number): Promise<ListenAccess> {
    const source = this.source;
    if (source.kind === "none") {
      return {
        granted: false,
        reason: "this deployment has no lane listener role: poll POST /internal/leases",
      };
    }
    if (source.kind === "local") {
      return {
        granted: true,
        region: source.region,
        endpoint: source.endpoint,
        credentials: LOCAL_CREDENTIALS,
        expiresAt: now + SESSION_SECONDS * 1000,
      };
    }
    const policy = laneListenPolicy(source.roleArn.split(":")[1] ?? "aws", queueUrls);
    if (policy === undefined) {
      return {
        granted: false,
        reason: "the lanes' session policy passes STS's limit: poll POST /internal/leases",
      };
    }
    const { Credentials } = await source.sts.send(
      new AssumeRoleCommand({
        RoleArn: source.roleArn,
        RoleSessionName: `lanes-${sessionName.replace(/[^\w+=,.@-]/g, "-")}`.slice(0, 64),
        DurationSeconds: SESSION_SECONDS,
        Policy: policy,
      }),
    );
    if (!Credentials?.AccessKeyId || !Credentials.SecretAccessKey || !Credentials.Expiration) {
      throw new Error(`AssumeRole of ${source.roleArn} returned no credentials`);
    }
    return {
      granted: true,
      region: source.region,
      credentials: {
        accessKeyId: Credentials.AccessKeyId,
        secretAccessKey: Credentials.SecretAccessKey,
        ...(Credentials.SessionToken ? { sessionToken: Credentials.SessionToken } : {}),
      },
      expiresAt: Credentials.Expiration.getTime(),
    };
  }
}
