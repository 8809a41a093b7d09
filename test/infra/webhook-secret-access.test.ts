import { Template } from "aws-cdk-lib/assertions";
import { beforeAll, describe, expect, it } from "vitest";
import { DEAD_LETTER_INDEX, DUE_INDEX, WEBHOOK_SECRET_KEY_PREFIX } from "../../lambdas/definitions/table";
import { JobschedStack } from "../../lib/jobsched-stack";
import { testApp } from "../support/cdk-app";
import {
  arnOfResource,
  type Decision,
  evaluate,
  type Statement,
  statementsOfFunction,
} from "../support/iam-evaluator";

/**
 * Issue 27, finding 8: the webhook secrets' items (pk WEBHOOK#<tenant> in the jobs table) are
 * readable by the API, which rotates them, and the dispatcher, which signs with them, and by no
 * other function; each function's synthesized policy evaluated as IAM evaluates it
 * (test/support/iam-evaluator.ts), with the partition keys a request names as
 * `dynamodb:LeadingKeys`, as DynamoDB sends them.
 */
const FUNCTIONS = ["Api", "Internal", "Tick", "Sweeper", "Dispatcher"] as const;
type FunctionName = (typeof FUNCTIONS)[number];
const SECRET_KEY = `${WEBHOOK_SECRET_KEY_PREFIX}arn:aws:iam::111122223333:role/Billing`;

describe("who can reach the webhook secrets", () => {
  let policies: Record<FunctionName, Statement[]>;
  let table: string;

  beforeAll(() => {
    const template = Template.fromStack(new JobschedStack(testApp(), "Secrets"));
    policies = Object.fromEntries(
      FUNCTIONS.map((name) => [name, statementsOfFunction(template, `Functions${name}`)]),
    ) as Record<FunctionName, Statement[]>;
    const [tableId] = Object.keys(template.findResources("AWS::DynamoDB::GlobalTable"));
    table = arnOfResource(tableId as string);
  });

  const decide = (name: FunctionName, action: string, keys?: string[], resource = table): Decision =>
    evaluate(policies[name], {
      action,
      resource,
      ...(keys ? { context: { "dynamodb:LeadingKeys": keys } } : {}),
    });
  const each = (action: string, keys?: string[], resource?: string) =>
    Object.fromEntries(FUNCTIONS.map((name) => [name, decide(name, action, keys, resource)]));

  it("lets only the API and the dispatcher read a secret's item, by any read", () => {
    for (const action of ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:BatchGetItem"]) {
      expect(each(action, [SECRET_KEY]), action).toEqual({
        Api: "allow",
        Internal: "explicit-deny",
        Tick: "explicit-deny",
        Sweeper: "explicit-deny",
        Dispatcher: "allow",
      });
    }
    // A batch that mixes a job's key with a secret's is refused whole.
    expect(decide("Tick", "dynamodb:BatchGetItem", ["JOB#j_1", SECRET_KEY])).toBe("explicit-deny");
  });

  it("lets only the API write one", () => {
    for (const action of ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]) {
      expect(each(action, [SECRET_KEY]), action).toEqual({
        Api: action === "dynamodb:DeleteItem" ? "implicit-deny" : "allow",
        Internal: "explicit-deny",
        Tick: "explicit-deny",
        Sweeper: "explicit-deny",
        Dispatcher: "explicit-deny",
      });
    }
  });

  it("lets no function read the base table whole, where no key would limit it; the tick scans its index only", () => {
    for (const action of ["dynamodb:Scan", "dynamodb:PartiQLSelect"]) {
      expect(Object.values(each(action)), action).toEqual(FUNCTIONS.map(() => "explicit-deny"));
    }
    expect(decide("Tick", "dynamodb:Scan", undefined, `${table}/index/${DEAD_LETTER_INDEX.name}`)).toBe(
      "allow",
    );
    expect(decide("Tick", "dynamodb:Scan", undefined, `${table}/index/${DUE_INDEX.name}`)).toBe(
      "implicit-deny",
    );
  });

  it("leaves every function its own items: jobs, runs, cursors, and the indexes", () => {
    for (const name of FUNCTIONS) {
      expect(decide(name, "dynamodb:GetItem", ["JOB#j_1"]), name).toBe("allow");
      expect(decide(name, "dynamodb:UpdateItem", ["SWEEP#0001"]), name).toBe("allow");
      expect(
        decide(name, "dynamodb:Query", [SECRET_KEY], `${table}/index/${DUE_INDEX.name}`),
        `${name}: an index holds no secret, whatever its key`,
      ).toBe("allow");
    }
  });
});
