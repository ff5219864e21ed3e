/**
 * @module What the job store's feature modules work on: the object's storage, its bindings (the
 * config, the tenant's object, the dispatch queues), its live streams, and what it last told
 * the others. One per object instance, made by the JobStore constructor.
 */
import type { Fanout } from "./fanout";

export interface JobContext {
  /** The object's SQLite database, transactions and alarm. */
  readonly storage: DurableObjectStorage;
  readonly sql: SqlStorage;
  readonly env: Env;
  /** Where every appended event goes live: SSE streams and WebSockets. */
  readonly fanout: Fanout;
  /** What this instance last told the tenant index and the queues, to skip repeating it (lost on eviction: then sent again). */
  told: { job: string; offer: string };
}
