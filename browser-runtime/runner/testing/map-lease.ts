/**
 * @module Test-only: a `map` lease over the synthetic six-image scene and the part of the service a
 * runner talks to while it works, in memory, for tests that run the real Runner on the real Node
 * host (wasm engine) without a server.
 */
import type { Checkpoint, RunnerClient, RunnerEvent } from "../../../client/index";
import type { MappingInput } from "../../../engine-wasm/ts/mapping";
import { syntheticMappingInput } from "../../../engine-wasm/ts/testing/synthetic-scenes";
import type { Lease, TaskOutputs } from "../../../protocol";
import { FEATURES_MEDIA_TYPE, encodeFeatures } from "../../../protocol/wire/features";
import { VERIFIED_MATCHES_MEDIA_TYPE, type VerifiedMatchesFile, imageIdAt } from "../../../protocol/wire/verified-matches";
import { coreArtifact, featuresPath } from "../executors/artifact";
import type { OutputFile } from "../task-context";

const sha256 = async (bytes: Uint8Array) =>
  [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as BufferSource))].map((b) => b.toString(16).padStart(2, "0")).join("");

/**
 * The part of the service a runner talks to while it works, in memory; it records how each lease
 * ended, the events it posted and the checkpoints it stored.
 */
export function memoryService() {
  const blobs = new Map<string, Uint8Array>();
  const ended = new Map<string, { completed?: TaskOutputs; failed?: { error_class: string; message: string } }>();
  const events = new Map<string, RunnerEvent[]>();
  const checkpoints = new Map<string, Checkpoint[]>();
  const state = (lease_id: string) => ({
    lease_id,
    expires_at: new Date(Date.now() + 60_000).toISOString(),
    directive: "continue" as const,
    latest_event_id: 0,
  });
  const client = {
    async readBlob(_lease: string, sha: string) {
      const bytes = blobs.get(sha);
      if (!bytes) throw new Error(`no blob ${sha}`);
      return bytes;
    },
    async writeBlob(_lease: string, bytes: Uint8Array) {
      const sha = await sha256(bytes);
      blobs.set(sha, bytes);
      return { blob_sha: sha, byte_size: bytes.byteLength };
    },
    // In-process: no other thread can reach it, so no keep-alive.
    target: () => null,
    heartbeat: async (lease: string) => state(lease),
    postEvents: async (lease: string, batch: RunnerEvent[]) => {
      events.set(lease, [...(events.get(lease) ?? []), ...batch]);
      return state(lease);
    },
    sealSnapshot: async () => ({ snapshot_seq: 1 }),
    putReconstructionFile: async () => undefined,
    putCheckpoint: async (lease: string, checkpoint: Checkpoint) => {
      checkpoints.set(lease, [...(checkpoints.get(lease) ?? []), checkpoint]);
      return state(lease);
    },
    complete: async (lease: string, outputs: TaskOutputs) => void ended.set(lease, { completed: outputs }),
    fail: async (lease: string, failure: { error_class: string; message: string }) => void ended.set(lease, { failed: failure }),
    release: async () => undefined,
  };
  return { blobs, ended, events, checkpoints, client: client as unknown as RunnerClient, store: client.writeBlob };
}

/**
 * A `map` lease over the synthetic six-image scene (or what `scene` makes of it: fewer images,
 * other keypoints), its verified matches passed through `forge`; `spec` overrides the pipeline
 * spec's fields, `checkpoint` is the one it resumes from.
 */
export async function mapLease(
  service: ReturnType<typeof memoryService>,
  id: string,
  forge: (f: VerifiedMatchesFile) => VerifiedMatchesFile = (f) => f,
  spec: Record<string, unknown> = {},
  checkpoint: Checkpoint | null = null,
  scene: (input: MappingInput) => MappingInput = (input) => input,
): Promise<Lease> {
  const input = scene(syntheticMappingInput());
  const names = input.images.map((_, i) => `img${i}.png`);
  const features: OutputFile[] = [];
  for (const [i, im] of input.images.entries()) {
    const n = im.keypoints.length / 2;
    const keypoints = new Float32Array(4 * n);
    for (let k = 0; k < n; k++) keypoints.set([im.keypoints[2 * k]!, im.keypoints[2 * k + 1]!, 2, 0], 4 * k);
    const bytes = encodeFeatures({
      imageWidth: 800,
      imageHeight: 600,
      descriptorDim: 128,
      descriptorKind: 1,
      keypoints,
      descriptors: new Uint8Array(128 * n),
    });
    const stored = await service.store(id, bytes);
    features.push({ path: featuresPath(names[i]!), ...stored, media_type: FEATURES_MEDIA_TYPE });
  }
  const verified = forge({
    pairs: input.pairs.map((p) => {
      const pairs = Array.from({ length: p.matches.length / 2 }, (_, k) => [p.matches[2 * k]!, p.matches[2 * k + 1]!] as [number, number]);
      return {
        image_id1: imageIdAt(p.image1),
        image_id2: imageIdAt(p.image2),
        type: "uncalibrated",
        num_inliers: pairs.length,
        F: null,
        E: null,
        H: null,
        inlier_matches: pairs,
      };
    }),
    "x-images": names.map((name, i) => ({ image_id: imageIdAt(i), name, resource_id: `IMG${i}` })),
  });
  const matchesFile = {
    path: "two_view_geometries.json",
    ...(await service.store(id, new TextEncoder().encode(JSON.stringify(verified)))),
    media_type: VERIFIED_MATCHES_MEDIA_TYPE,
  };
  const sha = "0".repeat(64);
  return {
    lease_id: id,
    runner_id: "RUNNER",
    expires_at: new Date(Date.now() + 60_000).toISOString(),
    ttl_seconds: 60,
    task: {
      task_id: `T${id}`,
      job_id: `J${id}`,
      kind: "map",
      phase: "incremental_register",
      attempt: 1,
      params: { spec: { kind: "incremental", seed: 3, extract_colors: false, snapshot_frames_freq: null, ...spec } },
    },
    inputs: {
      dataset: {
        dataset_id: "DATASET",
        manifest_hash: sha,
        camera_model: "SIMPLE_RADIAL",
        intrinsics_mode: "single_camera",
        is_spherical: false,
        respect_exif_orientation: true,
        rig_config: null,
        images: names.map((name, i) => ({
          image_id: `IMG${i}`,
          name,
          content_sha: sha,
          byte_size: 1,
          width: 800,
          height: 600,
          media_type: "image/png",
          focal_length_35mm: null,
          gps: null,
          pose_prior: null,
        })),
      },
      upstream: [
        {
          task_id: "EXTRACT",
          kind: "extract",
          outputs_ref: { artifacts: [coreArtifact("features.local.v1", "features", features, {})], result: null },
        },
        {
          task_id: "VERIFY",
          kind: "verify",
          outputs_ref: { artifacts: [coreArtifact("matches.verified.v1", "verified matches", [matchesFile], {})], result: null },
        },
      ],
      artifacts: {},
    },
    checkpoint,
    shard: null,
    _links: {},
  } as unknown as Lease;
}
