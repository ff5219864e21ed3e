/**
 * @module An R2 binding that fails on demand, for storage-fault tests: it wraps the real bucket
 * and, while a fault is armed, makes the matching calls throw (as R2 does when it is down) or
 * never answer (as a call that times out). A faulted call never reaches the real bucket.
 */
export type BucketOp = "head" | "get" | "put" | "delete" | "list";

export interface Fault {
  op: BucketOp;
  /** Only calls on keys matching this (default: every key). */
  key?: RegExp;
  mode: "throw" | "hang";
  /** How many matching calls fail before the fault disarms itself (default: until `heal`). */
  times?: number;
}

export class FaultyBucket {
  private faults: Fault[] = [];
  /** The calls that failed, as `op key`. */
  readonly failed: string[] = [];
  readonly bucket: R2Bucket;

  constructor(inner: R2Bucket) {
    this.bucket = new Proxy(inner, {
      get: (target, prop, receiver) => {
        const member: unknown = Reflect.get(target, prop, receiver);
        if (typeof member !== "function") return member;
        return (...args: unknown[]) => {
          const fault = this.take(String(prop), args[0]);
          if (!fault) return member.apply(target, args);
          this.failed.push(`${String(prop)} ${keyOf(args[0])}`);
          return fault.mode === "throw" ? Promise.reject(new Error(`injected R2 failure: ${String(prop)}`)) : new Promise(() => {});
        };
      },
    });
  }

  /** Arms faults (in addition to those armed). */
  fail(...faults: Fault[]): this {
    this.faults.push(...faults.map((f) => ({ ...f })));
    return this;
  }

  /** R2 answers again. */
  heal(): void {
    this.faults = [];
  }

  private take(op: string, arg: unknown): Fault | null {
    const key = keyOf(arg);
    const fault = this.faults.find((f) => f.op === op && (!f.key || f.key.test(key)));
    if (!fault) return null;
    if (fault.times !== undefined && --fault.times <= 0) this.faults = this.faults.filter((f) => f !== fault);
    return fault;
  }
}

/** The key a call names: a string, the first of a list (delete), or a list's prefix. */
function keyOf(arg: unknown): string {
  if (typeof arg === "string") return arg;
  if (Array.isArray(arg)) return String(arg[0] ?? "");
  if (arg && typeof arg === "object" && "prefix" in arg) return String((arg as { prefix?: string }).prefix ?? "");
  return "";
}
