// A runner computing extract, match and verify on a pool of engine workers (Node worker threads)
// produces the same artifacts, byte for byte, as a runner computing on its one engine, on real
// photos; the items' progress stays in the runner (a shard's is the service's to count).
import { readFileSync, readdirSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import type { DatasetSnapshot, Lease, RunnerEvent, TaskKind, TaskOutputs } from "../../../protocol";
import { type RunnerClient, sha256Hex } from "../../../client/index";
import { nodeRunnerHost } from "../node-host";
import { Runner, type RunnerHost } from "../runner";

const SET = new URL("../../../../shared/datasets/sacre-coeur/images/", import.meta.url);
const NAMES = readdirSync(SET).sort().slice(0, 4);
const PHASE = { extract: "feature_extraction", match: "matching", verify: "geometric_verification" } as const;

/** The service as one runner sees it: blobs by content, and what each lease posted and completed. */
function memoryService(blobs: Map<string, Uint8Array>) {
  const events: RunnerEvent[] = [];
  const outputs: TaskOutputs[] = [];
  const client = {
    // In-process: no other thread can reach it, so no keep-alive.
    target: () => null,
    heartbeat: async () => ({ directive: "continue" }),
    postEvents: async (_: string, batch: RunnerEvent[]) => (events.push(...batch), { directive: "continue" }),
    readBlob: async (_: string, sha: string) => blobs.get(sha)!,
    writeBlob: async (_: string, bytes: Uint8Array) => {
      const blob_sha = await sha256Hex(bytes);
      blobs.set(blob_sha, bytes);
      return { blob_sha, byte_size: bytes.length };
    },
    putReconstructionFile: async () => {},
    complete: async (_: string, o: TaskOutputs) => void outputs.push(o),
    fail: async (_: string, error: { message: string }) => {
      throw new Error(`the task failed: ${error.message}`);
    },
  };
  return { client: client as unknown as RunnerClient, events, outputs };
}

function lease(kind: keyof typeof PHASE, dataset: DatasetSnapshot, upstream: Array<{ kind: TaskKind; outputs_ref: TaskOutputs }>): Lease {
  return {
    lease_id: `lease-${kind}`,
    runner_id: "runner",
    expires_at: new Date().toISOString(),
    ttl_seconds: 60,
    task: { task_id: `task-${kind}`, job_id: "job", kind, phase: PHASE[kind], attempt: 1, params: {} },
    inputs: { dataset, upstream: upstream.map((u, i) => ({ task_id: `up-${i}`, ...u })), artifacts: {} },
    checkpoint: null,
    shard: {
      shard_id: `shard-${kind}`,
      index: 0,
      count: 1,
      items: shardItems(
        kind,
        dataset.images.map((im) => im.name),
      ),
    },
    _links: {},
  } as unknown as Lease;
}

/** The task as one shard, as the service plans a small dataset: an item per image, or one block of every pair. */
function shardItems(kind: keyof typeof PHASE, names: string[]) {
  if (kind === "extract")
    return names.map((name, i) => ({ key: String(i).padStart(64, "0"), path: `features/${name}`, images: [name], block: null }));
  return [
    {
      key: "0".repeat(64),
      path: kind === "match" ? "matches/0-0.bin" : "two_view_geometries/0-0.json",
      images: names,
      block: [names, names],
    },
  ];
}

/** A shard's item artifacts as the service assembles them into the task's one artifact. */
const assembled = (outputs: TaskOutputs): TaskOutputs => ({
  artifacts: [{ ...outputs.artifacts[0]!, files: outputs.artifacts.flatMap((a) => a.files) }],
  result: null,
});

/** Runs extract, match and verify on `host`; answers each task's outputs and the events it posted. */
async function stages(host: RunnerHost, images: Map<string, Uint8Array>, dataset: DatasetSnapshot) {
  const service = memoryService(new Map(images));
  const runner = new Runner(service.client, host);
  const done: Record<string, { outputs: TaskOutputs; events: RunnerEvent[] }> = {};
  const upstream: Array<{ kind: TaskKind; outputs_ref: TaskOutputs }> = [];
  for (const kind of ["extract", "match", "verify"] as const) {
    const before = service.events.length;
    expect(await runner.runTask(lease(kind, dataset, upstream))).toBe("completed");
    const outputs = service.outputs.at(-1)!;
    done[kind] = { outputs, events: service.events.slice(before) };
    upstream.push({ kind, outputs_ref: assembled(outputs) });
  }
  return done;
}

const hosts: RunnerHost[] = [];
afterAll(() => hosts.forEach((h) => h.engines.release()));

describe("a runner's engine pool", () => {
  it("extract, match and verify on two engine workers give the artifacts of one engine, byte for byte", async () => {
    const images = new Map<string, Uint8Array>();
    const entries: DatasetSnapshot["images"] = [];
    for (const [i, name] of NAMES.entries()) {
      const bytes = new Uint8Array(readFileSync(new URL(name, SET)));
      const sha = await sha256Hex(bytes);
      images.set(sha, bytes);
      entries.push({
        image_id: `img-${i}`,
        name,
        content_sha: sha,
        byte_size: bytes.length,
        width: null,
        height: null,
        media_type: "image/jpeg",
        focal_length_35mm: null,
        gps: null,
        pose_prior: null,
      });
    }
    const dataset: DatasetSnapshot = {
      dataset_id: "ds",
      manifest_hash: "0".repeat(64),
      camera_model: "SIMPLE_RADIAL",
      intrinsics_mode: "per_image",
      is_spherical: false,
      respect_exif_orientation: false,
      rig_config: null,
      images: entries,
    };
    const one = await nodeRunnerHost("one-engine", { engineWorkers: 1 });
    const pooled = await nodeRunnerHost("two-engines", { engineWorkers: 2 });
    hosts.push(one, pooled);
    expect([one.engines.size, pooled.engines.size]).toEqual([1, 2]);

    const expected = await stages(one, images, dataset);
    const actual = await stages(pooled, images, dataset);
    for (const kind of ["extract", "match", "verify"] as const) {
      expect(actual[kind]!.outputs, kind).toEqual(expected[kind]!.outputs);
      // A shard's progress in its task's phase is the service's (shards done over shards): the runner sends none of its own.
      expect(
        actual[kind]!.events.filter((e) => e.kind === "phase_progress" && e.phase === PHASE[kind]),
        kind,
      ).toEqual([]);
    }
    expect(actual.extract!.events).toContainEqual(
      expect.objectContaining({ kind: "log_line", message: `SIFT of ${NAMES.length} images on WASM, 2 engines at once` }),
    );
    expect(expected.match!.outputs.artifacts[0]!.summary.num_matches).toBeGreaterThan(0);
    expect(expected.verify!.outputs.artifacts[0]!.summary.num_verified_pairs).toBeGreaterThan(0);
  }, 300_000);
});
