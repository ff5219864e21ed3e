/**
 * @module A synthetic sealed model for workerd tests: a reconstruction whose snapshot 1 is a
 * synthetic scene (test/support/synthetic-model.ts), a runner of this build's export and
 * conversion executors, and a test file's tenant with such a runner.
 */
import { RunnerClient, type TaskOutputs } from "../../client/index";
import type { TaskKind } from "../../protocol";
import { POINTS_MEDIA_TYPE } from "../../protocol/wire/points";
import { enc, scene } from "../../test/support/synthetic-model";
import { MemoryBlobCache } from "../../browser-runtime/runner/blob-cache";
import { createEnginePool } from "../../browser-runtime/runner/pool/engine-pool";
import { Runner } from "../../browser-runtime/runner/runner";
import { DigestRunner } from "../../scripts/digest-runner";
import type { FetchLike } from "../../client/index";
import { beforeAll } from "vitest";
import { BASE, type Call, call as defaultCall, expectStatus, selfFetch, tenantClient, uploadBlob } from "./helpers";

export { enc, scene };

/**
 * A project with a dataset of the scene's three images (distinct small blobs named img0.jpg ..
 * img2.jpg), and an incremental pipeline job on it computed by a DigestRunner up to its map
 * task, which seals `model` as snapshot 1 and completes with the root files as its
 * `reconstruction.sparse.v1` artifact. The tenant's queue must hold no other ready task. `as`: the
 * tenant's client (default: the none-mode default tenant). `o.projectId`: in that project rather than
 * a new one; `o.photo`: the bytes of each image by name (default distinct small blobs).
 */
export async function sealedReconstruction<
  M extends Pick<ReturnType<typeof scene>, "cameras" | "images" | "points" | "summary"> = ReturnType<typeof scene>,
>(
  model: M = scene(30) as unknown as M,
  as: { call: Call; fetch: FetchLike } = { call: defaultCall, fetch: selfFetch },
  o: { projectId?: string; photo?: (name: string) => Uint8Array; extraFiles?: Record<string, Uint8Array> } = {},
) {
  const { call } = as;
  const projectId = o.projectId ?? (await expectStatus(call("POST", "/v1/projects", { name: "sealed" }), 201)).json.project_id;
  const entries = [];
  for (const im of model.images.images)
    entries.push({
      name: im.name,
      blob_sha: await uploadBlob(o.photo?.(im.name) ?? enc({ photo: im.name, nonce: Math.random() }), {}, call),
    });
  const d = await expectStatus(call("POST", `/v1/projects/${projectId}/datasets`, { name: "d", source: { kind: "upload", entries } }), 201);
  const job = await expectStatus(
    call("POST", `/v1/projects/${projectId}/pipelines/incremental`, { dataset_id: d.json.dataset_id, spec: { kind: "incremental" } }),
    202,
  );
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
    const file = async (name: string, bytes: Uint8Array) => ({
      name,
      blob_sha: await runner.upload(lease, bytes),
      byte_size: bytes.byteLength,
    });
    const files = [
      await file("cameras.json", enc(model.cameras)),
      await file("images.json", enc(model.images)),
      await file("points.bin", model.points),
      await file("summary.json", enc(model.summary)),
      ...(await Promise.all(Object.entries(o.extraFiles ?? {}).map(([name, bytes]) => file(name, bytes)))),
    ];
    const summary = model.summary.models[0]!;
    await expectStatus(
      call("POST", `/v1/leases/${lease.lease_id}/snapshots`, {
        files,
        summary: { num_reg_images: summary.num_reg_images, num_points3D: summary.num_points3D },
      }),
      201,
    );
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
          files: files.map((f) => ({
            path: f.name,
            blob_sha: f.blob_sha,
            byte_size: f.byte_size,
            media_type: f.name.endsWith(".bin") ? POINTS_MEDIA_TYPE : "application/json",
          })),
        },
      ],
      result: null,
    };
    await runner.client.complete(lease.lease_id, outputs);
    return {
      pid: projectId as string,
      did: d.json.dataset_id as string,
      rid: job.json.recon_id as string,
      jid: job.json.job_id as string,
      photos: entries,
      model,
      runner,
    };
  }
}

/**
 * The real runner (browser-runtime/runner) with only executors that need no engine (by default
 * exports and conversions; also `georegister`), run inside workerd against this Worker; `fetch`
 * sends its requests as a tenant's (default: the none-mode default tenant).
 */
export async function exportRunner(stages: TaskKind[] = ["export", "convert_artifact"], fetch: FetchLike = selfFetch) {
  const client = new RunnerClient({ baseUrl: BASE, fetch });
  const unavailable = () => Promise.reject(new Error("exports need no engine"));
  const abilities = { webgpu: null, wasm: { simd: false, threads: false }, memory_bytes: null, hardware_concurrency: null };
  return new Runner(
    client,
    {
      name: "workerd-exporter",
      abilities,
      runtimeVersions: await client.serviceRuntimeVersions(),
      engine: unavailable,
      engines: createEnginePool({
        abilities,
        engine: unavailable,
        spawn: () => {
          throw new Error("exports need no engine");
        },
      }),
      sift: unavailable,
      decode: unavailable,
      encode: unavailable,
      projector: unavailable,
      cache: new MemoryBlobCache(),
    },
    { stages },
  );
}

/**
 * A test file's own tenant (api_key mode, helpers.ts tenantClient), made before its tests: `as` its client (for
 * sealedReconstruction), `call` its caller, and `run(jobId)`, which has a runner of this build's executors of `stages`
 * (exportRunner) compute the tenant's ready tasks and answers the job.
 */
export function stageTenant(tenantId: string, stages: TaskKind[]) {
  const as = {} as { call: Call; fetch: FetchLike };
  beforeAll(async () => {
    Object.assign(as, await tenantClient(tenantId));
  });
  const call: Call = (...args) => as.call(...args);
  const run = async (jobId: string) => {
    await (await exportRunner(stages, as.fetch)).drain();
    return (await call("GET", `/v1/jobs/${jobId}`)).json;
  };
  return { as, call, run };
}
