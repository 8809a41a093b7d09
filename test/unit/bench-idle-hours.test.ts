import { describe, expect, it } from "vitest";
import { CLOUD_SETTINGS } from "../../lambdas/definitions/settings";
import { readsTwoBuckets, TWO_BUCKET_SHARE } from "../../scripts/bench-cost-idle";

/** bench:cost --mix idle: a 10-minute window's two-bucket sweeps replaced by the month's share. */
describe("the idle bench's hour correction", () => {
  const hour = Date.UTC(2026, 11, 3, 13, 0, 0);

  it("counts a tick as reading two buckets for the cursor's 2 minutes after the hour and the lookahead's 90 s before it", () => {
    expect(readsTwoBuckets(hour + 60_000 + 59_000, 90)).toBe(true);
    expect(readsTwoBuckets(hour + 2 * 60_000, 90)).toBe(false);
    expect(readsTwoBuckets(hour + 30 * 60_000, 90)).toBe(false);
    expect(readsTwoBuckets(hour + 58 * 60_000 + 30_000, 90)).toBe(true);
    expect(readsTwoBuckets(hour + 58 * 60_000 + 29_000, 90)).toBe(false);
  });

  it("uses the share of an hour's instants whose sweep reads two buckets", () => {
    let two = 0;
    for (let s = 0; s < 3_600; s++)
      if (readsTwoBuckets(hour + s * 1000, CLOUD_SETTINGS.lookaheadSeconds)) two++;
    expect(TWO_BUCKET_SHARE).toBeCloseTo(two / 3_600, 6);
  });
});
