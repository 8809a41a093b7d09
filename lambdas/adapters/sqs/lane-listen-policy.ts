import { queueNameOf } from "./lane-keys";

/** STS refuses a session policy longer than this many characters (its plain text). */
export const SESSION_POLICY_MAX_CHARS = 2_048;

/**
 * The session policy a listening worker's credentials carry (decision 0049): ReceiveMessage on
 * its lanes and nothing else. Each lane is named by its queue's name without the generation
 * suffix and a trailing `*`, so the credentials still reach the lane's next generation (a lane
 * the janitor deleted and a sender made again); the listener role's own policy limits them to
 * this stack's lanes in this account, so region and account are left as `*` to save characters.
 * Undefined when the policy would pass STS's limit.
 */
export function laneListenPolicy(partition: string, queueUrls: readonly string[]): string | undefined {
  const resources = [...new Set(queueUrls.map((url) => queueNameOf(url).replace(/-\d+$/, "")))].map(
    (name) => `arn:${partition}:sqs:*:*:${name}*`,
  );
  const policy = JSON.stringify({
    Version: "2012-10-17",
    Statement: [{ Effect: "Allow", Action: "sqs:ReceiveMessage", Resource: resources }],
  });
  return policy.length <= SESSION_POLICY_MAX_CHARS ? policy : undefined;
}
