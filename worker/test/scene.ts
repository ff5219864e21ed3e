/**
 * @module A synthetic sealed model for workerd tests: the scene's files, a reconstruction whose
 * snapshot 1 is that scene, and a runner of this build's export and conversion executors.
 */
import { RunnerClient, type TaskOutputs } from "../../client/index";
import { POINTS_MEDIA_TYPE, encodePoints } from "../../protocol/wire/points";
import { MemoryBlobCache } from "../../browser-runtime/runner/blob-cache";
import { createEnginePool } from "../../browser-runtime/runner/pool/engine-pool";
import { Runner } from "../../browser-runtime/runner/runner";
import { DigestRunner } from "../../test/runner/digest-runner";
import type { FetchLike } from "../../client/index";
import { BASE, type Call, call as defaultCall, expectStatus, selfFetch, uploadBlob } from "./helpers";

export const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

/**
 * A small synthetic scene: a PINHOLE camera, three images looking down +z from x = -0.2, 0, 0.2,
 * and `n` points in front of them (ids 10, 13, 16, ...), each observed by every image at its
 * exact projection, plus one keypoint per image in no track. `radial`: the camera is a
 * SIMPLE_RADIAL with k = 0 (the same projections, a distorted model to the formats that refuse one).
 */
export function scene(n: number, seed = 1, o: { radial?: boolean } = {}) {
  let s = seed;
  const rand = () => ((s = (s * 16807) % 2147483647) / 2147483647);
  const xyz = new Float32Array(3 * n);
  for (let i = 0; i < n; i++) xyz.set([rand() * 2 - 1, rand() * 2 - 1, 4 + rand() * 2], 3 * i);
  const ids = BigUint64Array.from({ length: n }, (_, i) => BigInt(10 + 3 * i));
  const points = encodePoints({ xyz, rgb: new Uint8Array(3 * n).fill(200), trackLength: new Uint16Array(n).fill(3), ids });
  const [f, cx, cy] = [500, 320, 240];
  const camera = o.radial ? { model: "SIMPLE_RADIAL", params: [f, cx, cy, 0] } : { model: "PINHOLE", params: [f, f, cx, cy] };
  const cameras = { cameras: [{ camera_id: 1, ...camera, width: 640, height: 480, has_prior_focal_length: false }] };
  const images = {
    images: [-0.2, 0, 0.2].map((tx, k) => ({
      image_id: k + 1,
      name: `img${k}.jpg`,
      camera_id: 1,
      cam_from_world: { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [tx, 0, 0] as [number, number, number] },
      points2D: [
        { xy: [1, 1] as [number, number], point3d_id: null },
        ...Array.from({ length: n }, (_, i) => ({
          xy: [(f * (xyz[3 * i]! + tx)) / xyz[3 * i + 2]! + cx, (f * xyz[3 * i + 1]!) / xyz[3 * i + 2]! + cy] as [number, number],
          point3d_id: Number(ids[i]),
        })),
      ],
    })),
  };
  const summary = { models: [{ idx: 0, num_reg_images: 3, num_points3D: n }], phase: "incremental_register", mean_reproj_err: 0 };
  return { xyz, ids, points, cameras, images, summary };
}

/**
 * A project with a dataset of the scene's three images (distinct small blobs named img0.jpg ..
 * img2.jpg), and an incremental pipeline job on it computed by a DigestRunner up to its map
 * task, which seals `model` as snapshot 1 and completes with the root files as its
 * `reconstruction.sparse.v1` artifact. The tenant's queue must hold no other ready task. `as`: the
 * tenant's client (default: the none-mode default tenant).
 */
export async function sealedReconstruction(model = scene(30), as: { call: Call; fetch: FetchLike } = { call: defaultCall, fetch: selfFetch }) {
  const { call } = as;
  const p = await expectStatus(call("POST", "/v1/projects", { name: "sealed" }), 201);
  const entries = [];
  for (const im of model.images.images) entries.push({ name: im.name, blob_sha: await uploadBlob(enc({ photo: im.name, nonce: Math.random() }), {}, call) });
  const d = await expectStatus(call("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries } }), 201);
  const job = await expectStatus(call("POST", `/v1/projects/${p.json.project_id}/pipelines/incremental`, { dataset_id: d.json.dataset_id, spec: { kind: "incremental" } }), 202);
  const runner = new DigestRunner({ base: BASE, fetch: as.fetch, name: "sealer" });
  await runner.register();
  for (;;) {
    const lease = await runner.lease();
    if (!lease) throw new Error("the pipeline's map task was never leased");
    if (lease.task.job_id !== job.json.job_id) throw new Error("another job's task was leased");
    if (lease.task.kind !== "map") {
      await runner.work(lease);
      continue;
    }
    const file = async (name: string, bytes: Uint8Array) => ({ name, blob_sha: await runner.upload(lease, bytes), byte_size: bytes.byteLength });
    const files = [
      await file("cameras.json", enc(model.cameras)),
      await file("images.json", enc(model.images)),
      await file("points.bin", model.points),
      await file("summary.json", enc(model.summary)),
    ];
    const summary = model.summary.models[0]!;
    await expectStatus(call("POST", `/v1/leases/${lease.lease_id}/snapshots`, { files, summary: { num_reg_images: summary.num_reg_images, num_points3D: summary.num_points3D } }), 201);
    const outputs: TaskOutputs = {
      artifacts: [
        {
          kind: "reconstruction.sparse.v1",
          name: "sparse reconstruction",
          uri: null,
          artifact_format: "svc.reconstruction.sparse.v1",
          schema_version: 1,
          media_type: "application/octet-stream",
          summary: {},
          metadata: {},
          files: files.map((f) => ({ path: f.name, blob_sha: f.blob_sha, byte_size: f.byte_size, media_type: f.name.endsWith(".bin") ? POINTS_MEDIA_TYPE : "application/json" })),
        },
      ],
      result: null,
    };
    await runner.client.complete(lease.lease_id, outputs);
    return { pid: p.json.project_id as string, did: d.json.dataset_id as string, rid: job.json.recon_id as string, jid: job.json.job_id as string, photos: entries, model, runner };
  }
}

/**
 * The real runner (browser-runtime/runner) with only the executors that need no engine: exports
 * and conversions, run inside workerd against this Worker.
 */
export async function exportRunner() {
  const client = new RunnerClient({ baseUrl: BASE, fetch: selfFetch });
  const unavailable = () => Promise.reject(new Error("exports need no engine"));
  const abilities = { webgpu: null, wasm: { simd: false, threads: false }, memory_bytes: null, hardware_concurrency: null };
  return new Runner(
    client,
    {
      name: "workerd-exporter",
      abilities,
      runtimeVersions: await client.serviceRuntimeVersions(),
      engine: unavailable,
      engines: createEnginePool({ abilities, engine: unavailable, spawn: () => { throw new Error("exports need no engine"); } }),
      sift: unavailable,
      decode: unavailable,
      encode: unavailable,
      projector: unavailable,
      cache: new MemoryBlobCache(),
    },
    { stages: ["export", "convert_artifact"] },
  );
}
