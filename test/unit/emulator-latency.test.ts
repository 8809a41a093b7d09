import { describe, expect, it } from "vitest";
import { awsEquivalentMs, createInvocationTimer } from "../../scripts/emulator-latency";

/**
 * bench:cost restates each invocation's time at AWS's latencies: the time it waited on the
 * emulators comes out, and each stretch of overlapping calls goes back in at the service's
 * typical latency. Worked by hand.
 */
describe("an invocation's time at AWS latencies", () => {
  it("replaces sequential waits one by one: 100 ms with two 30 ms DynamoDB calls is 40 + 2 x 5", () => {
    const calls = [
      { start: 10, end: 40, awsMs: 5 },
      { start: 50, end: 80, awsMs: 5 },
    ];
    expect(awsEquivalentMs(0, 100, calls)).toBe(100 - 60 + 10);
  });

  it("counts overlapping calls once, at the slowest of them: ten parallel puts and an SQS send", () => {
    const calls = [
      ...Array.from({ length: 10 }, (_, i) => ({ start: 10 + i, end: 60 + i, awsMs: 5 })),
      { start: 30, end: 70, awsMs: 20 },
    ];
    // One stretch, 10..70 = 60 ms waited, put back as 20 ms (the SQS call's latency).
    expect(awsEquivalentMs(0, 100, calls)).toBe(100 - 60 + 20);
  });

  it("clips calls to the invocation, and never puts back more than was waited", () => {
    const calls = [
      { start: -50, end: 10, awsMs: 5 }, // began before: 10 ms inside
      { start: 95, end: 200, awsMs: 5 }, // outlived it: 5 ms inside
      { start: 40, end: 42, awsMs: 20 }, // a 2 ms answer stays 2 ms
    ];
    expect(awsEquivalentMs(0, 100, calls)).toBe(100 - (10 + 5 + 2) + (5 + 5 + 2));
  });

  it("counts calls that followed one another in one stretch as round trips: a paged query", () => {
    // Three pages, each asked once the one before came back, overlapped by one long put: one
    // stretch of 0..90 ms, but three DynamoDB round trips at least (15 ms), not one.
    const calls = [
      { start: 0, end: 30, awsMs: 5 },
      { start: 30, end: 60, awsMs: 5 },
      { start: 60, end: 90, awsMs: 5 },
      { start: 10, end: 80, awsMs: 5 },
    ];
    expect(awsEquivalentMs(0, 100, calls)).toBe(100 - 90 + 15);
  });

  it("keeps an invocation with no calls as measured", () => {
    expect(awsEquivalentMs(0, 123, [])).toBe(123);
  });

  it("times the calls made inside an invocation only, through the async context", async () => {
    // Prepare: a client-shaped object whose middleware the timer adds; its call waits 30 ms.
    type Handler = (args: { input: object }) => Promise<unknown>;
    let wrap: ((next: Handler) => Handler) | undefined;
    const client = { middlewareStack: { add: (m: (next: Handler) => Handler) => (wrap = m) } };
    const timer = createInvocationTimer();
    timer.time(client, "dynamodb");
    const send = (wrap as (next: Handler) => Handler)(() => new Promise((done) => setTimeout(done, 30)));
    // Act
    const reported: number[][] = [];
    await send({ input: {} }); // outside any invocation: not counted
    await timer.invoke(
      async () => {
        await send({ input: {} });
      },
      (measured, aws) => reported.push([measured, aws]),
    );
    // Assess: about 30 ms measured, about 5 ms at AWS's latency.
    const [[measured, aws] = []] = reported;
    expect(measured).toBeGreaterThanOrEqual(25);
    expect((measured as number) - (aws as number)).toBeGreaterThanOrEqual(15);
    expect(aws).toBeLessThan(measured as number);
  });
});
