import type { TestProject } from "vitest/node";
import { startDynamo, startSqs } from "../../local/emulators";

/**
 * Starts dynalite (in memory) and fauxqs once for the whole run, on random loopback ports.
 * Test files share the emulators but never a table or a queue: see test/support/stack.ts.
 */
export default async function setup(project: TestProject) {
  const [dynamo, sqs] = await Promise.all([startDynamo(), startSqs()]);
  project.provide("dynamoEndpoint", dynamo.endpoint);
  project.provide("sqsEndpoint", sqs.endpoint);
  return async () => {
    await Promise.all([dynamo.close(), sqs.close()]);
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    dynamoEndpoint: string;
    sqsEndpoint: string;
  }
}
