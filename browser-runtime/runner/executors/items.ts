/**
 * @module A stage's per-item loop (images of extract, pairs of match and verify), up to `lanes`
 * items at once on the runner's engine pool. Results come back in item order whatever finished
 * first, so a task's outputs are the same bytes with one lane or many. Each item starts after a
 * cancel point and `phase_progress` counts the items completed (6.3, 3.1). On the first failure
 * (or a stop at a cancel point) no further item starts; the ones in flight are awaited, then the
 * failure is thrown, so no engine call outlives its task. `atMost` (the client's) is that loop without
 * cancel points and progress (a shard's uploads); `Ahead` prepares the next items while the current ones compute.
 */
import { atMost } from "../../../client/index";
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
  let done = 0;
  ctx.progress(0, total);
  return atMost(o.lanes, items, async (item, index) => {
    await ctx.cancelPoint();
    const result = await work(item, index);
    done += weight(item);
    ctx.progress(done, total);
    return result;
  });
}

/**
 * Items prepared ahead of their use, in item order: taking item `i` starts the preparation of the
 * `depth` items after it (and of `i` itself, if not yet). Each item is prepared once; a taken one is
 * forgotten, so at most `depth + 1` prepared items are held. A preparation nobody takes (the task
 * failed or stopped first) rejects quietly; `pending()` lists those under way, for the task to await.
 */
export class Ahead<T> {
  private readonly started = new Map<number, Promise<T>>();
  private readonly taken = new Set<number>();

  constructor(
    private readonly depth: number,
    private readonly count: number,
    private readonly prepare: (index: number) => Promise<T>,
  ) {}

  take(index: number): Promise<T> {
    const own = this.start(index);
    this.started.delete(index);
    this.taken.add(index);
    for (let j = index + 1; j <= Math.min(index + this.depth, this.count - 1); j += 1) if (!this.taken.has(j)) this.start(j);
    return own;
  }

  pending(): Promise<T>[] {
    return [...this.started.values()];
  }

  private start(index: number): Promise<T> {
    let p = this.started.get(index);
    if (!p) this.started.set(index, (p = quiet(this.prepare(index))));
    return p;
  }
}

/** `p` itself, marked handled: its rejection still reaches whoever awaits it, but an unawaited one is no unhandled rejection. */
export function quiet<T>(p: Promise<T>): Promise<T> {
  p.catch(() => {});
  return p;
}

/** One turn of the event loop: requests just made are sent before a synchronous computation (the in-thread engine) holds it. */
export const yieldToIo = () => new Promise<void>((resolve) => setTimeout(resolve, 0));
