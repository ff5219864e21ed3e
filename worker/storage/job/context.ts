/**
 * @module What the job store's feature modules work on: the object's storage, its bindings (the
 * config, the tenant's object, the dispatch queues), its live streams, and what it last told
 * the others. One per object instance, made by the JobStore constructor.
 */
import type { DatasetSnapshot, StageArtifact } from "../../../protocol";
import type { Fanout } from "./fanout";

/** What a job froze at its creation and never changes: read from the database once per instance (records.ts). */
export interface Frozen {
  dataset: DatasetSnapshot | null;
  artifacts: Record<string, StageArtifact>;
  /** Both as stored (JSON text), spliced into every lease as they are (leases.ts grantLease). */
  datasetJson: string;
  artifactsJson: string;
  /** The dataset's images' byte sizes by content SHA-256 (blobs.ts inputSize). */
  imageSizes: Map<string, number | undefined>;
}

export interface JobContext {
  /** The object's SQLite database, transactions and alarm. */
  readonly storage: DurableObjectStorage;
  readonly sql: SqlStorage;
  readonly env: Env;
  /** Where every appended event goes live: SSE streams and WebSockets. */
  readonly fanout: Fanout;
  /** What this instance last told the tenant index and the queues, to skip repeating it (lost on eviction: then sent again). */
  told: { job: string; offer: string };
  /** The propagation under way and the one queued after it (propagate.ts: group commit). */
  sync: { running: Promise<void> | null; next: Promise<void> | null };
  /** The job's frozen records once read (null before; cleared when the job is purged). */
  frozen: Frozen | null;
}
