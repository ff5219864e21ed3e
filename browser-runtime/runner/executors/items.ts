/**
 * @module A stage's per-item loop (images of extract, pairs of match and verify), up to `lanes`
 * items at once on the runner's engine pool. Results come back in item order whatever finished
 * first, so a task's outputs are the same bytes with one lane or many. Each item starts after a
 * cancel point and `phase_progress` counts the items completed (6.3, 3.1). On the first failure
 * (or a stop at a cancel point) no further item starts; the ones in flight are awaited, then the
 * failure is thrown, so no engine call outlives its task.
 */
import type { TaskContext } from "../task-context";

export interface EachItemOptions<T> {
  /** Items computed at once; 1 is one after another. */
  lanes: number;
  /** What one item counts for in the progress (verify's batches count their pairs); default 1. */
  weight?: (item: T) => number;
}

export async function eachItem<T, R>(
  ctx: TaskContext,
  items: readonly T[],
  o: EachItemOptions<T>,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const weight = o.weight ?? (() => 1);
  const total = items.reduce((sum, item) => sum + weight(item), 0);
  const results = new Array<R>(items.length);
  let next = 0;
  let done = 0;
  let failure: { error: unknown } | null = null;
  ctx.progress(0, total);
  const lane = async () => {
    while (failure === null && next < items.length) {
      const index = next++;
      try {
        await ctx.cancelPoint();
        results[index] = await work(items[index]!, index);
        done += weight(items[index]!);
        ctx.progress(done, total);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(o.lanes, items.length)) }, lane));
  if (failure !== null) throw (failure as { error: unknown }).error;
  return results;
}
