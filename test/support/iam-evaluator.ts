import type { Template } from "aws-cdk-lib/assertions";

/**
 * A small IAM policy evaluator for the stack's tests: which requests a function's role may
 * make, and what a documented trust policy lets in, decided the way IAM decides them (an
 * explicit deny wins, then an allow, otherwise the implicit deny). It knows only the policy
 * grammar this project writes and throws on anything else (NotAction, an unknown condition
 * operator, an intrinsic it cannot resolve), so a test can never pass on a policy it misread.
 *
 * Not a library because the maintained IAM simulator on npm is AGPL-licensed; this covers the
 * few operators the stack and docs/deploy.md use, each with the semantics of the IAM User
 * Guide (condition operators, ForAnyValue/ForAllValues, Null, the implicit deny).
 */

export interface Statement {
  readonly Effect: "Allow" | "Deny";
  readonly Action?: string | readonly string[];
  readonly Resource?: unknown;
  readonly Principal?: unknown;
  readonly Condition?: Readonly<Record<string, Readonly<Record<string, string | readonly string[]>>>>;
  readonly NotAction?: unknown;
  readonly NotResource?: unknown;
  readonly NotPrincipal?: unknown;
}

export interface IamRequest {
  readonly action: string;
  /** Absent for a trust policy, which has no Resource element. */
  readonly resource?: string;
  /** The calling principal's ARN: what a resource (trust) policy's Principal is matched against. */
  readonly principal?: string;
  /** Condition keys of the request; a multivalued key (dynamodb:LeadingKeys, aws:TagKeys) is a list. */
  readonly context?: Readonly<Record<string, string | readonly string[]>>;
}

export type Decision = "allow" | "explicit-deny" | "implicit-deny";

/** What IAM decides for `request` under these statements. */
export function evaluate(statements: readonly Statement[], request: IamRequest): Decision {
  const matching = statements.filter((statement) => applies(statement, request));
  if (matching.some((s) => s.Effect === "Deny")) return "explicit-deny";
  return matching.some((s) => s.Effect === "Allow") ? "allow" : "implicit-deny";
}

/** Values a CloudFormation template's intrinsics stand for in these tests. */
export const PSEUDO = { partition: "aws", region: "us-east-1", account: "123456789012" } as const;

/** A resource's ARN as `resolve` renders `Fn::GetAtt [id, "Arn"]`. */
export function arnOfResource(logicalId: string): string {
  return `<${logicalId}.Arn>`;
}

/** A policy value with its intrinsics resolved to strings (Ref, Fn::GetAtt, Fn::Join). */
export function resolve(value: unknown): unknown {
  if (typeof value === "string" || value === undefined) return value;
  if (Array.isArray(value)) return value.map(resolve);
  if (typeof value !== "object" || value === null) return value;
  const entries = Object.entries(value);
  if (entries.length === 1) {
    const [key, argument] = entries[0] as [string, unknown];
    if (key === "Ref") {
      const pseudo: Record<string, string> = {
        "AWS::Partition": PSEUDO.partition,
        "AWS::Region": PSEUDO.region,
        "AWS::AccountId": PSEUDO.account,
        "AWS::URLSuffix": "amazonaws.com",
      };
      return pseudo[argument as string] ?? `<${argument as string}>`;
    }
    if (key === "Fn::GetAtt") {
      const [id, attribute] = argument as [string, string];
      return `<${id}.${attribute}>`;
    }
    if (key === "Fn::Join") {
      const [separator, parts] = argument as [string, unknown[]];
      return parts.map((part) => stringOf(resolve(part))).join(separator);
    }
    if (key.startsWith("Fn::")) throw new Error(`iam-evaluator: cannot resolve ${key}`);
  }
  return Object.fromEntries(entries.map(([key, inner]) => [key, resolve(inner)]));
}

function stringOf(value: unknown): string {
  if (typeof value !== "string")
    throw new Error(`iam-evaluator: expected a string, got ${JSON.stringify(value)}`);
  return value;
}

/**
 * The statements of a function's role: its inline policies from the template, intrinsics
 * resolved. Its one managed policy must be AWSLambdaBasicExecutionRole (logs only); any other
 * makes this throw rather than evaluate without it.
 */
export function statementsOfFunction(template: Template, functionIdPrefix: string): Statement[] {
  const functions = Object.entries(template.findResources("AWS::Lambda::Function")).filter(([id]) =>
    id.startsWith(functionIdPrefix),
  );
  if (functions.length !== 1)
    throw new Error(`iam-evaluator: ${functions.length} functions named ${functionIdPrefix}*`);
  const [, fn] = functions[0] as [string, { Properties: { Role: { "Fn::GetAtt": [string, string] } } }];
  const roleId = fn.Properties.Role["Fn::GetAtt"][0];
  const role = template.findResources("AWS::IAM::Role")[roleId] as {
    Properties: { ManagedPolicyArns?: unknown[]; Policies?: unknown[] };
  };
  for (const managed of role.Properties.ManagedPolicyArns ?? []) {
    if (!JSON.stringify(managed).includes("service-role/AWSLambdaBasicExecutionRole")) {
      throw new Error(
        `iam-evaluator: ${roleId} has a managed policy it cannot read: ${JSON.stringify(managed)}`,
      );
    }
  }
  if (role.Properties.Policies !== undefined)
    throw new Error(`iam-evaluator: ${roleId} has inline role policies`);
  return Object.values(template.findResources("AWS::IAM::Policy"))
    .filter((policy) =>
      ((policy.Properties as { Roles?: unknown[] }).Roles ?? []).some(
        (ref) => JSON.stringify(ref) === JSON.stringify({ Ref: roleId }),
      ),
    )
    .flatMap(
      (policy) =>
        (policy.Properties as { PolicyDocument: { Statement: Statement[] } }).PolicyDocument.Statement,
    )
    .map((statement) => resolve(statement) as Statement);
}

function applies(statement: Statement, request: IamRequest): boolean {
  for (const unsupported of ["NotAction", "NotResource", "NotPrincipal"] as const) {
    if (statement[unsupported] !== undefined)
      throw new Error(`iam-evaluator: ${unsupported} is not supported`);
  }
  const actions = [statement.Action ?? []].flat() as string[];
  if (!actions.some((pattern) => globMatches(pattern, request.action, true))) return false;
  if (statement.Resource !== undefined) {
    if (request.resource === undefined) return false;
    const resources = [statement.Resource].flat().map(stringOf);
    if (!resources.some((pattern) => globMatches(pattern, request.resource as string, false))) return false;
  }
  if (statement.Principal !== undefined && !principalMatches(statement.Principal, request.principal))
    return false;
  return conditionsHold(statement.Condition ?? {}, request.context ?? {});
}

/** IAM's wildcards: `*` any run of characters, `?` any one. Actions compare without case. */
function globMatches(pattern: string, value: string, ignoreCase: boolean): boolean {
  const source = [...pattern]
    .map((c) => (c === "*" ? ".*" : c === "?" ? "." : c.replace(/[.+^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${source}$`, ignoreCase ? "i" : "").test(value);
}

/** `"*"`, or `{AWS: ARN | account root | [..]}`: an account's root (or bare id) stands for all its principals. */
function principalMatches(principal: unknown, caller: string | undefined): boolean {
  if (principal === "*") return true;
  if (caller === undefined) return false;
  const aws = (principal as { AWS?: unknown }).AWS;
  if (aws === undefined) throw new Error(`iam-evaluator: unsupported principal ${JSON.stringify(principal)}`);
  const callerAccount = /^arn:aws[a-z-]*:(?:iam|sts)::(\d{12}):/.exec(caller)?.[1];
  return [aws].flat().some((entry) => {
    const text = stringOf(entry);
    if (text === "*" || text === caller) return true;
    const root = /^(?:arn:aws[a-z-]*:iam::)?(\d{12})(?::root)?$/.exec(text)?.[1];
    return root !== undefined && root === callerAccount;
  });
}

type ContextValues = Readonly<Record<string, string | readonly string[]>>;

/** Every operator, and every key under it, must hold (AND); any of a key's policy values may match (OR). */
function conditionsHold(condition: NonNullable<Statement["Condition"]>, context: ContextValues): boolean {
  const lookup = (key: string) => {
    const found = Object.entries(context).find(([name]) => name.toLowerCase() === key.toLowerCase());
    return found?.[1];
  };
  return Object.entries(condition).every(([operator, keys]) =>
    Object.entries(keys).every(([key, expected]) => operatorHolds(operator, [expected].flat(), lookup(key))),
  );
}

function operatorHolds(
  operator: string,
  expected: readonly string[],
  actual: string | readonly string[] | undefined,
): boolean {
  if (operator === "Null") {
    // "true": the key is absent; "false": it is present.
    return expected.some((value) => (value === "true") === (actual === undefined));
  }
  const [qualifier, base] = operator.includes(":")
    ? (operator.split(":") as [string, string])
    : [undefined, operator];
  const test = comparison(base);
  if (qualifier === "ForAnyValue") {
    return actual !== undefined && [actual].flat().some((value) => expected.some((e) => test(e, value)));
  }
  if (qualifier === "ForAllValues") {
    // An absent key or an empty list holds: every one of its (no) values matches.
    return actual === undefined || [actual].flat().every((value) => expected.some((e) => test(e, value)));
  }
  if (qualifier !== undefined) throw new Error(`iam-evaluator: unsupported qualifier ${qualifier}`);
  if (Array.isArray(actual))
    throw new Error(`iam-evaluator: ${operator} on a multivalued key needs a qualifier`);
  const negated = base.includes("Not");
  if (actual === undefined) return negated;
  const matched = expected.some((e) => test(e, actual as string));
  return negated ? !matched : matched;
}

function comparison(operator: string): (expected: string, actual: string) => boolean {
  switch (operator) {
    case "StringEquals":
    case "StringNotEquals":
    case "ArnEquals":
      return (expected, actual) => expected === actual;
    case "StringLike":
    case "StringNotLike":
    case "ArnLike":
      return (expected, actual) => globMatches(expected, actual, false);
    default:
      throw new Error(`iam-evaluator: unsupported condition operator ${operator}`);
  }
}
