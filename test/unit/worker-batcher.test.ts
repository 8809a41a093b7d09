import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createBatcher } from "../../packages/worker/src/batcher";

/**
 * Decision 0050: the worker's completions and heartbeats wait up to a window for others to
 * share a request, but never past the latest time an item gave (its lease's end, less a margin).
 */
describe("createBatcher", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function recording(windowMs: number, maxItems = 100) {
    const sent: Array<{ at: number; items: readonly number[] }> = [];
    const batched = createBatcher<number, string>({
      windowMs,
      maxItems,
      send: async (items) => {
        sent.push({ at: Date.now(), items });
        return items.map((item) => `ok ${item}`);
      },
    });
    return { sent, batched };
  }

  it("sends the items of one window in one call and answers each its own", async () => {
    const { sent, batched } = recording(1_000);
    const answers = [batched(1), batched(2)];
    await vi.advanceTimersByTimeAsync(400);
    answers.push(batched(3));
    await vi.advanceTimersByTimeAsync(599);
    expect(sent).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(sent).toEqual([{ at: 1_001_000, items: [1, 2, 3] }]);
    expect(await Promise.all(answers)).toEqual(["ok 1", "ok 2", "ok 3"]);
  });

  it("sends before the window ends when an item's latest time comes first", async () => {
    const { sent, batched } = recording(1_000);
    void batched(1);
    await vi.advanceTimersByTimeAsync(100);
    void batched(2, Date.now() + 250);
    await vi.advanceTimersByTimeAsync(249);
    expect(sent).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(sent).toEqual([{ at: 1_000_350, items: [1, 2] }]);
  });

  it("sends at once for a latest time already past, and a later latest time never delays a batch", async () => {
    const { sent, batched } = recording(1_000);
    void batched(1, Date.now() - 5);
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toEqual([{ at: 1_000_000, items: [1] }]);
    void batched(2);
    void batched(3, Date.now() + 60_000);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(sent.map((s) => s.items)).toEqual([[1], [2, 3]]);
  });

  it("sends at once for a latest time that is not a number, and later items cannot hold it back", async () => {
    const { sent, batched } = recording(1_000);
    void batched(1, Number.NaN);
    void batched(2, Date.now() + 3_000);
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toEqual([{ at: 1_000_000, items: [1, 2] }]);
  });

  it("sends at once for a past latest time on an item that is not the batch's first", async () => {
    const { sent, batched } = recording(1_000);
    void batched(1);
    await vi.advanceTimersByTimeAsync(200);
    void batched(2, Date.now() - 1);
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toEqual([{ at: 1_000_200, items: [1, 2] }]);
  });

  it("sends the open batch when flushed", async () => {
    const { sent, batched } = recording(1_000);
    void batched(1);
    batched.flush();
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toEqual([{ at: 1_000_000, items: [1] }]);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(sent).toHaveLength(1);
  });

  it("sends a full batch at once and starts a new window for the next item", async () => {
    const { sent, batched } = recording(1_000, 2);
    void batched(1);
    void batched(2);
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toEqual([{ at: 1_000_000, items: [1, 2] }]);
    await vi.advanceTimersByTimeAsync(500);
    void batched(3);
    await vi.advanceTimersByTimeAsync(999);
    expect(sent).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(sent[1]).toEqual({ at: 1_001_500, items: [3] });
  });

  it("rejects every item of a batch whose call failed", async () => {
    const batched = createBatcher<number, string>({
      windowMs: 10,
      maxItems: 100,
      send: async () => {
        throw new Error("down");
      },
    });
    const answers = [batched(1), batched(2)].map((p) => p.catch((error: Error) => error.message));
    await vi.advanceTimersByTimeAsync(10);
    expect(await Promise.all(answers)).toEqual(["down", "down"]);
  });
});
