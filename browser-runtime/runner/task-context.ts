/**
 * @module What an executor sees of its task: the lease, its inputs through the blob cache,
 * outputs written as content-addressed blobs, progress reporting (6.3) with rates, and the
 * cooperative cancel points (3.1: a cancel takes effect between phases).
 */
import type { Engine } from "../../engine-wasm/ts/engine";
import type { SiftStages } from "../gpu/select";
import type { Projector } from "../gpu/projection-gpu";
import type {
  Checkpoint,
  Dataset,
  DerivedDatasetRegister,
  Lease,
  LeaseDirective,
  Phase,
  ReconstructionFileName,
  RunnerEvent,
  SnapshotSeal,
} from "../../protocol";
import type { DecodedImage } from "../stages/extract";
import type { VideoFrames } from "../decode/video-browser";
import type { EnginePool } from "./pool/engine-pool";

export interface OutputFile {
  path: string;
  blob_sha: string;
  byte_size: number;
  media_type: string;
}

/** Thrown at a cancel point after the service said `stop` or `teardown`. */
export class TaskStopped extends Error {
  override name = "TaskStopped";
  constructor(readonly directive: Exclude<LeaseDirective, "continue">) {
    super(`the service asked to ${directive}`);
  }
}

/**
 * The task's inputs cannot give what it asks (an export of cameras the format cannot hold, say):
 * the task fails with `error_class: ValidationError` (2.11 rule 3) and this message.
 */
export class TaskValidationError extends Error {
  override name = "ValidationError";
}

export interface TaskContext {
  readonly lease: Lease;
  /** The task's normalised specs (`lease.task.params`). */
  readonly params: Record<string, unknown>;
  /** The wasm engine, loaded once per runner. */
  engine(): Promise<Engine>;
  /** The runner's engines for per-item work (an image, a pair), `lanes(bytes)` of them at once. */
  readonly engines: EnginePool;
  /** SIFT extraction and matching bound to the faster implementation on this device (measured once). */
  sift(): Promise<SiftStages>;
  /** A blob the lease may read (dataset image, upstream output, checkpoint), cached by content. */
  read(sha: string): Promise<Uint8Array>;
  /** Decodes image bytes with the host's decoder. */
  decode(bytes: Uint8Array, options: { respectExifOrientation: boolean }): Promise<DecodedImage>;
  /** Encodes 8-bit pixels with the host's encoder. */
  encode(image: DecodedImage, format: "jpeg" | "png", quality: number): Promise<Uint8Array>;
  /** Panorama projections bound to the faster implementation on this device (measured once). */
  projector(): Promise<Projector>;
  /** The frames of a video the host decodes (WebCodecs; only runners with a decoder lease `frame_extract`). */
  videoFrames: VideoFrames;
  /** Registers the dataset the task derives from images it uploaded (4.14 rule 4); a retry gets the same one. */
  registerDataset(body: DerivedDatasetRegister): Promise<{ dataset: Dataset; reused: boolean }>;
  /** Stores an output and answers its file entry for an artifact descriptor. */
  write(path: string, bytes: Uint8Array, mediaType: string): Promise<OutputFile>;
  /** `phase_progress` with `current`/`total` and an items-per-second `rate`; sent in batches. */
  progress(current: number, total: number | null, phase?: Phase): void;
  log(level: "DEBUG" | "INFO" | "WARNING" | "ERROR", message: string): void;
  metric(key: string, value: number): void;
  /**
   * A cancel point between steps: yields to the event loop (so heartbeats and event flushes run
   * between long synchronous engine calls), then throws TaskStopped when the service asked to
   * stop or tear down.
   */
  cancelPoint(): Promise<void>;
  /** Stores a resumable state (mapping); a resumed task's lease carries it back. */
  saveCheckpoint(bytes: Uint8Array, summary: Record<string, unknown>): Promise<void>;
  /** Seals a snapshot of the job's reconstruction (map tasks); answers its seq. */
  sealSnapshot(seal: SnapshotSeal): Promise<number>;
  /**
   * Sets a reconstruction-level file of the job's reconstruction. Stage jobs drive no
   * reconstruction: there the file stays only in the task's artifact (answers false).
   */
  reconstructionFile(name: ReconstructionFileName, file: OutputFile): Promise<boolean>;
  /** The checkpoint this lease resumes from, if any. */
  readonly resumeFrom: Checkpoint | null;
}

/** Queues events and computes progress rates; the owner flushes the queue to the service. */
export class EventQueue {
  private queue: RunnerEvent[] = [];
  private started = new Map<string, { t: number; current: number }>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  push(event: RunnerEvent): void {
    this.queue.push(event);
  }

  progress(phase: Phase, current: number, total: number | null): void {
    const t = this.now();
    const first = this.started.get(phase) ?? { t, current };
    if (!this.started.has(phase)) this.started.set(phase, first);
    const seconds = (t - first.t) / 1000;
    const rate = seconds > 0 ? (current - first.current) / seconds : null;
    // Keep one pending progress event per phase: only the newest matters.
    this.queue = this.queue.filter((e) => !(e.kind === "phase_progress" && e.phase === phase));
    this.queue.push({ kind: "phase_progress", phase, current, total, rate: rate === null ? null : Math.round(rate * 1000) / 1000 });
  }

  take(): RunnerEvent[] {
    const out = this.queue;
    this.queue = [];
    return out;
  }

  get size(): number {
    return this.queue.length;
  }
}
