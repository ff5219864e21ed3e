/**
 * @module A runner that speaks the runner protocol (worker/routes/runners.md) without computing
 * SfM, for the job machinery's tests and the events benchmark: it does real but simple work for
 * any task: it fetches every image of the leased dataset through its
 * lease, checks each one's SHA-256 against the manifest, reports progress per image, uploads
 * a JSON list of the digests and sizes as a content-addressed blob and completes with it. A
 * shard lease (runners.md "Shards") covers its items' images only, with one such list per item.
 * The service treats it like any other runner. Runs on plain `fetch`, so it works inside
 * workerd tests (with SELF.fetch) and as a Node process (`npx tsx scripts/digest-runner.ts`).
 */
import {
  type FetchLike,
  type Lease,
  type LeaseState,
  type Runner,
  RunnerClient,
  type RunnerEvent,
  type TaskOutputs,
  sha256Hex,
} from "../client/index";
import type { TaskKind } from "../protocol";

export interface RunnerOptions {
  base: string;
  fetch?: FetchLike;
  /** `Authorization` for api_key mode or a pool runner token. */
  authorization?: string;
  /** Without `authorization`, in `api_key` mode: register as a keyless volunteer (client/runner.ts `register`), as a browser tab does. */
  keyless?: boolean;
  name?: string;
  stages?: TaskKind[];
  /** Each completion leases the next task or shard in the same request (`x-lease_next`, runners.md "Batching"): see `next`. */
  leaseNext?: boolean;
  /** A lying runner (tests of untrusted results, runners.md "Trust"): it reports every image's digest wrong. */
  lie?: boolean;
}

/**
 * What the digest runner reads of a lease: the client's Lease, or the protocol's (the tests' own
 * type of the same JSON), whichever the caller holds.
 */
export interface LeaseLike {
  lease_id: string;
  task: Pick<Lease["task"], "task_id" | "phase">;
  inputs: { dataset: { images: ReadonlyArray<{ name: string; content_sha: string }> } | null };
  /** A shard lease (runners.md "Shards"): the items it covers. */
  shard?: { items: ReadonlyArray<{ path: string; images: readonly string[] }> } | null;
}

export class DigestRunner {
  /** The real runner's protocol client (client/runner.ts). */
  readonly client: RunnerClient;
  runner: Runner | null = null;
  /** The lease the last completion brought along (`leaseNext`), or null. */
  next: Lease | null = null;

  constructor(private readonly o: RunnerOptions) {
    this.client = new RunnerClient({ baseUrl: o.base, authorization: o.authorization, fetch: o.fetch });
  }

  /** Registers with the runtime versions the service reports, as a runner built from the same bundle would. */
  async register(): Promise<Runner> {
    this.runner = await this.client.register(
      {
        name: this.o.name ?? "digest-runner",
        stages: this.o.stages ?? ["extract", "match", "verify", "map"],
        runtime_versions: await this.client.serviceRuntimeVersions(),
        abilities: { webgpu: null, wasm: { simd: true, threads: false }, memory_bytes: 256 * 1024 * 1024, hardware_concurrency: 1 },
      },
      { keyless: this.o.keyless },
    );
    return this.runner;
  }

  lease(): Promise<Lease | null> {
    return this.client.lease(this.runner!.runner_id);
  }

  heartbeat(lease: LeaseLike): Promise<LeaseState> {
    return this.client.heartbeat(lease.lease_id);
  }

  events(lease: LeaseLike, events: RunnerEvent[]): Promise<LeaseState> {
    return this.client.postEvents(lease.lease_id, events);
  }

  async upload(lease: LeaseLike, bytes: Uint8Array): Promise<string> {
    return (await this.client.writeBlob(lease.lease_id, bytes)).blob_sha;
  }

  /**
   * Does the task's work. `onImage` runs after each image's progress event (a test's hook to
   * stop mid-task); the work stops early when the service says `stop` or `teardown`.
   */
  async work(lease: LeaseLike, onImage?: (done: number) => Promise<void> | void): Promise<"completed" | "stopped"> {
    const outputs = await this.compute(lease, onImage);
    if (!outputs) return "stopped";
    this.next = await this.client.complete(lease.lease_id, outputs, { leaseNext: this.o.leaseNext });
    return "completed";
  }

  /** The task's work up to its completion (`work` without completing): its outputs, or null when it stopped. */
  async compute(lease: LeaseLike, onImage?: (done: number) => Promise<void> | void): Promise<TaskOutputs | null> {
    const all = lease.inputs.dataset?.images ?? [];
    const covered = lease.shard && new Set(lease.shard.items.flatMap((it) => it.images));
    const images = covered ? all.filter((im) => covered.has(im.name)) : all;
    const digests: { name: string; sha256: string; byte_size: number }[] = [];
    for (const [i, image] of images.entries()) {
      const bytes = await this.client.readBlob(lease.lease_id, image.content_sha);
      const digest = await sha256Hex(bytes);
      if (digest !== image.content_sha) {
        await this.client.fail(lease.lease_id, {
          error_class: "IntegrityError",
          message: `${image.name} hashes to ${digest}`,
          detail: null,
        });
        return null;
      }
      digests.push({
        name: image.name,
        sha256: this.o.lie ? digest.replace(/^./, (c) => (c === "0" ? "1" : "0")) : digest,
        byte_size: bytes.byteLength,
      });
      const state = await this.events(lease, [
        { kind: "phase_progress", phase: lease.task.phase, current: i + 1, total: images.length, rate: null },
      ]);
      await onImage?.(i + 1);
      if (state.directive === "teardown") return null;
      if (state.directive === "stop") {
        await this.client.release(lease.lease_id, "cancel requested");
        return null;
      }
    }
    const parts = lease.shard
      ? lease.shard.items.map((it) => ({ path: it.path, names: new Set(it.images) }))
      : [{ path: "digests.json", names: null }];
    const artifacts = [];
    for (const part of parts) {
      const mine = part.names ? digests.filter((d) => part.names!.has(d.name)) : digests;
      artifacts.push(await this.digestArtifact(lease, part.path, mine));
    }
    return { artifacts, result: null };
  }

  private async digestArtifact(
    lease: LeaseLike,
    path: string,
    digests: { name: string; sha256: string; byte_size: number }[],
  ): Promise<TaskOutputs["artifacts"][number]> {
    const text = new TextEncoder().encode(JSON.stringify({ task_id: lease.task.task_id, images: digests }));
    const blob = await this.upload(lease, text);
    return {
      kind: "digests.image_sha256",
      name: "image digests",
      uri: null,
      artifact_format: "testrunner.image_digests.v1",
      schema_version: 1,
      media_type: "application/json",
      summary: { images: digests.length, bytes: digests.reduce((s, d) => s + d.byte_size, 0) },
      metadata: {},
      files: [{ path, blob_sha: blob, byte_size: text.byteLength, media_type: "application/json" }],
    };
  }

  /** Leases and works until no task is ready. */
  async drain(): Promise<number> {
    let n = 0;
    for (let lease = await this.lease(); lease; lease = await this.lease()) {
      await this.work(lease);
      n++;
    }
    return n;
  }
}

// As a process: `npx tsx scripts/digest-runner.ts <base_url> [name]` works until killed,
// polling when idle; it prints one line per lease so a parent process can follow it.
const isMain = typeof process !== "undefined" && process.argv[1]?.endsWith("digest-runner.ts");
if (isMain) {
  const [base, name] = process.argv.slice(2);
  const runner = new DigestRunner({ base: base!, name: name ?? "digest-runner", authorization: process.env.RUNNER_AUTHORIZATION });
  const delayMs = Number(process.env.RUNNER_IMAGE_DELAY_MS ?? 0);
  await runner.register();
  console.log(`registered ${runner.runner!.runner_id}`);
  for (;;) {
    const lease = await runner.lease();
    if (!lease) {
      await new Promise((r) => setTimeout(r, 100));
      continue;
    }
    console.log(`leased ${lease.task.task_id} ${lease.lease_id}`);
    const outcome = await runner.work(lease, (done) => {
      console.log(`progress ${lease.task.task_id} ${done}`);
      return new Promise((r) => setTimeout(r, delayMs));
    });
    console.log(`${outcome} ${lease.task.task_id}`);
  }
}
