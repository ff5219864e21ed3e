import { describe, expect, it } from "vitest";
import { atMost } from "./at-most";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("atMost", () => {
  it("answers in item order with at most `limit` at once; on a failure starts no further item and waits for those under way", async () => {
    let running = 0;
    let most = 0;
    const ended: number[] = [];
    await expect(
      atMost(2, [20, 1, 5, 1, 1], async (ms, i) => {
        most = Math.max(most, ++running);
        await sleep(ms);
        running--;
        ended.push(i);
        if (i === 1) throw new Error("upload refused");
        return i;
      }),
    ).rejects.toThrow("upload refused");
    expect(most).toBe(2);
    // Item 1 failed while item 0 ran: item 2 and later never started, item 0 ended before the failure was thrown.
    expect(ended.sort()).toEqual([0, 1]);
    expect(await atMost(3, [3, 1, 2], async (ms, i) => (await sleep(ms), `item ${i}`))).toEqual(["item 0", "item 1", "item 2"]);
  });
});
