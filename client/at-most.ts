/**
 * `work` on every item, at most `limit` at once, the results in item order: a folder's photos uploaded a few at a time
 * (the demo, `npm run reconstruct`) and a runner's shard files, without a connection per item. On a failure no further
 * item starts and the ones under way are awaited before it is thrown, so no work outlives the call.
 */
export async function atMost<T, R>(limit: number, items: readonly T[], work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | null = null;
  const lane = async () => {
    while (failure === null && next < items.length) {
      const index = next++;
      try {
        results[index] = await work(items[index]!, index);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
  if (failure !== null) throw (failure as { error: unknown }).error;
  return results;
}
