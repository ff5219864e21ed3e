// A stage's per-item loop: results in item order whatever finishes first, at most `lanes` items
// at once, progress counting completed items, and a stop at a cancel point starting no further item.
import { describe, expect, it } from "vitest";
import { TaskStopped, type TaskContext } from "../task-context";
import { Ahead, eachItem } from "./items";

function context(stopAfterStarts = Infinity) {
  const progress: Array<[number, number | null]> = [];
  let starts = 0;
  const ctx = {
    progress: (current: number, total: number | null) => void progress.push([current, total]),
    async cancelPoint() {
      if (starts++ >= stopAfterStarts) throw new TaskStopped("stop");
    },
  } as unknown as TaskContext;
  return { ctx, progress };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("eachItem", () => {
  it("answers in item order with at most `lanes` items at once, and progress counts completed items", async () => {
    const { ctx, progress } = context();
    let running = 0;
    let most = 0;
    const results = await eachItem(ctx, [30, 5, 20, 1, 10], { lanes: 2 }, async (ms, i) => {
      most = Math.max(most, ++running);
      await sleep(ms);
      running--;
      return `item ${i}`;
    });
    expect(results).toEqual(["item 0", "item 1", "item 2", "item 3", "item 4"]);
    expect(most).toBe(2);
    expect(progress).toEqual([
      [0, 5],
      [1, 5],
      [2, 5],
      [3, 5],
      [4, 5],
      [5, 5],
    ]);
  });

  it("weights progress by what an item counts for", async () => {
    const { ctx, progress } = context();
    await eachItem(ctx, [[1, 2, 3, 4], [5]], { lanes: 1, weight: (batch) => batch.length }, async (batch) => batch);
    expect(progress).toEqual([
      [0, 5],
      [4, 5],
      [5, 5],
    ]);
  });

  it("after a stop at a cancel point starts no further item, lets the ones in flight finish, then throws", async () => {
    const { ctx } = context(2);
    const finished: number[] = [];
    const run = eachItem(ctx, [0, 1, 2, 3, 4, 5], { lanes: 2 }, async (i) => {
      await sleep(i === 0 ? 30 : 5);
      finished.push(i);
    });
    await expect(run).rejects.toBeInstanceOf(TaskStopped);
    expect(finished.sort()).toEqual([0, 1]);
  });
});

describe("Ahead", () => {
  it("taking an item prepares the next `depth` once each, holds none it handed out, and a failed preparation rejects only its taker", async () => {
    const prepared: number[] = [];
    const ahead = new Ahead(2, 5, async (i) => {
      prepared.push(i);
      if (i === 3) throw new Error("unreadable");
      return `image ${i}`;
    });
    expect(await ahead.take(0)).toBe("image 0");
    expect(prepared).toEqual([0, 1, 2]);
    expect(await ahead.take(1)).toBe("image 1");
    expect(await ahead.take(2)).toBe("image 2");
    // Item 3 failed when it was prepared (while 1 was taken), unobserved until taken: no unhandled rejection meanwhile.
    expect(prepared).toEqual([0, 1, 2, 3, 4]);
    expect(ahead.pending()).toHaveLength(2);
    await expect(ahead.take(3)).rejects.toThrow("unreadable");
    expect(await ahead.take(4)).toBe("image 4");
    expect(ahead.pending()).toEqual([]);
    expect(prepared).toEqual([0, 1, 2, 3, 4]);
  });
});
