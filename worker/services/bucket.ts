/**
 * @module The R2 binding as the API's handlers use it: every call bounded by a deadline
 * (`SVC_BLOB_TIMEOUT_SECONDS`), and a call that throws or does not answer in time turned into a
 * 503 problem with `Retry-After`, instead of a 500 or a request that hangs. Handlers write R2
 * before they record anything (or record a reservation that nothing can see yet, as an upload's
 * finalize does), so a request refused this way has changed nothing that can be seen, and its retry
 * succeeds once R2 answers again. A body stream that breaks after the headers went out cannot be
 * turned into a problem; the client sees a body shorter than its Content-Length.
 */
import { ApiError } from "../errors";

export function storageUnavailable(op: string, why: string): ApiError {
  return new ApiError(
    503,
    "unavailable",
    `blob storage failed (${op}: ${why}); nothing was recorded, retry the request`,
    {},
    { "Retry-After": "1" },
  );
}

/** `bucket` with every method's promise raced against `timeoutMs` and its failure made a 503 problem. */
export function guardedBucket(bucket: R2Bucket, timeoutMs: number): R2Bucket {
  return new Proxy(bucket, {
    get(target, prop, receiver) {
      const member: unknown = Reflect.get(target, prop, receiver);
      if (typeof member !== "function") return member;
      const op = String(prop);
      return (...args: unknown[]) => {
        const result: unknown = member.apply(target, args);
        return result instanceof Promise ? guarded(op, result, timeoutMs) : result;
      };
    },
  });
}

async function guarded<T>(op: string, call: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(storageUnavailable(op, `no answer within ${timeoutMs / 1000} s`)), timeoutMs);
  });
  try {
    return await Promise.race([call, deadline]);
  } catch (e) {
    if (e instanceof ApiError) throw e;
    throw storageUnavailable(op, e instanceof Error ? e.message : String(e));
  } finally {
    clearTimeout(timer);
  }
}
