/**
 * The service killed outright (SIGKILL to workerd, as a machine that loses power) and started
 * again on the same state directory (test/support/stack-process.ts):
 * - mid chunked upload (a chunk in flight): the acknowledged chunks are kept, the upload resumes
 *   from `received_bytes` and finalizes with the photo's SHA-256;
 * - mid job (a shard being extracted, then a map task that has sealed a snapshot): the leases are
 *   reclaimed after their TTL, the job succeeds, its event `seq`s are one contiguous log, the
 *   snapshot sealed before the crash is intact;
 * - mid snapshot seal, again and again: every listed snapshot has all its files with the bytes
 *   sent, no other is visible, and each is announced exactly once by `snapshot_available`;
 * - mid one-shot request (4.15), a runner computing it: once no request can still wait for it,
 *   the one-shot job's alarm leaves neither its rows nor its R2 objects (read from the state on
 *   disk, test/support/persisted-state.ts), and no runner is offered its task again.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type FetchLike, type Lease, RunnerClient, type SnapshotSeal, createEdgeSfmClient } from "../../client/index";
import type { TaskKind } from "../../protocol";
import { openPersistedState } from "../support/persisted-state";
import { POINTS_MEDIA_TYPE } from "../../protocol/wire/points";
import { DigestRunner } from "../../scripts/digest-runner";
import { datasetDir } from "../../scripts/reference-sets";
import { type StackProcess, startStackProcess } from "../support/stack-process";
import { eventLog, httpClient, uploadBytes } from "../support/http";
import { enc, scene } from "../support/synthetic-model";

const dir = mkdtempSync(join(tmpdir(), "edgesfm-service-faults-"));
/**
 * A short lease, so leases the crash orphaned are reclaimed soon after the restart; a short one-shot timeout, so a
 * one-shot job left behind discards itself SVC_ONESHOT_TIMEOUT_SECONDS + 10 s after its creation.
 */
const ONESHOT_TIMEOUT_SECONDS = 5;
const VARS = {
  SVC_LEASE_TTL_SECONDS: "3",
  SVC_TEST_CAPABILITIES: "features.extract.sift",
  SVC_ONESHOT_TIMEOUT_SECONDS: String(ONESHOT_TIMEOUT_SECONDS),
};
let stack: StackProcess | undefined;

afterAll(() => {
  stack?.kill();
  rmSync(dir, { recursive: true, force: true });
});

/** Kills the running stack, if any, and starts it again on the same state. */
async function restart(): Promise<StackProcess> {
  stack?.kill();
  stack = await startStackProcess(dir, VARS);
  return stack;
}

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A project and dataset of `n` small distinct images, and an incremental pipeline job on it. */
async function submitJob(base: string, n: number) {
  const http = httpClient(base);
  const p = await http("POST", "/v1/projects", { name: "faults" });
  const entries = [];
  for (let i = 0; i < n; i++)
    entries.push({ name: `img${i}.jpg`, blob_sha: await uploadBytes(http, enc({ image: i, nonce: Math.random() })) });
  const d = await http("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries } });
  const job = await http("POST", `/v1/projects/${p.json.project_id}/pipelines/incremental`, {
    dataset_id: d.json.dataset_id,
    spec: { kind: "incremental" },
  });
  expect(job.status).toBe(202);
  return { job_id: job.json.job_id as string, recon_id: job.json.recon_id as string };
}

/** A runner (the test's own hands) for `stages` (default map tasks), on the current stack. */
async function mapRunner(base: string, stages: TaskKind[] = ["map"]): Promise<{ client: RunnerClient; runnerId: string }> {
  const client = new RunnerClient({ baseUrl: base });
  const runner = await client.register({ name: stages.join("+"), stages, runtime_versions: await client.serviceRuntimeVersions() });
  return { client, runnerId: runner.runner_id };
}

/** Leases until a task is offered (an orphaned lease is reclaimed after its TTL). */
async function leaseSoon(client: RunnerClient, runnerId: string): Promise<Lease> {
  for (let i = 0; i < 100; i++) {
    const lease = await client.lease(runnerId);
    if (lease) return lease;
    await sleep(200);
  }
  throw new Error("no task was offered within 20 s");
}

/** Uploads a synthetic model's files under the lease; answers the seal body. */
async function sealBody(client: RunnerClient, leaseId: string, points: number): Promise<SnapshotSeal> {
  const model = scene(points, points);
  const files = [];
  for (const [name, bytes, type] of [
    ["cameras.json", enc(model.cameras), "application/json"],
    ["images.json", enc(model.images), "application/json"],
    ["points.bin", model.points, POINTS_MEDIA_TYPE],
    ["summary.json", enc({ ...model.summary, models: [{ idx: 0, num_reg_images: 3, num_points3D: points }] }), "application/json"],
  ] as const) {
    files.push({ name, ...(await client.writeBlob(leaseId, bytes, type)) });
  }
  return { files, submodels: [], summary: { num_reg_images: 3, num_points3D: points } };
}

/** Every listed snapshot whole, with the bytes of the body sealed for it (by its point count); answers the seqs. */
async function checkSnapshots(base: string, reconId: string, sent: Map<number, SnapshotSeal>): Promise<number[]> {
  const http = httpClient(base);
  const seqs = (await http("GET", `/v1/reconstructions/${reconId}/snapshots`)).json.seqs as number[];
  expect(seqs).toEqual(seqs.map((_, i) => i + 1));
  for (const seq of seqs) {
    const summary = await http("GET", `/v1/reconstructions/${reconId}/snapshots/${seq}/summary.json`);
    expect(summary.status).toBe(200);
    const body = sent.get(summary.json.models[0].num_points3D);
    expect(body, `snapshot ${seq} is one of the bodies sent`).toBeDefined();
    for (const f of body!.files) {
      const file = await http("GET", `/v1/reconstructions/${reconId}/snapshots/${seq}/${f.name}`);
      expect(file.status, `${f.name} of snapshot ${seq}`).toBe(200);
      expect(sha256(file.raw)).toBe(f.blob_sha);
    }
  }
  return seqs;
}

describe("the service killed and restarted on its state", () => {
  it("mid chunked upload: the acknowledged chunks are kept, the upload resumes and finalizes with the photo's SHA-256", async () => {
    const images = new URL("images/", datasetDir("sacre-coeur"));
    const photo = new Uint8Array(readFileSync(new URL(readdirSync(images).sort()[0]!, images)));
    const chunkBytes = 64 * 1024;
    const first = await restart();
    // The fourth chunk's PATCH is in flight when the stack dies.
    let patches = 0;
    const killing: FetchLike = (req) => {
      const sent = fetch(req);
      if (req.method === "PATCH" && ++patches === 4) setTimeout(() => first.kill(), 5);
      return sent;
    };
    await expect(
      createEdgeSfmClient({ baseUrl: first.base, fetch: killing, retries: 0 }).upload(photo, { chunkBytes, attempts: 1 }),
    ).rejects.toThrow();

    const second = await restart();
    const http = httpClient(second.base);
    const uploads = await http(
      "POST",
      "/v1/uploads",
      { expected_size: photo.byteLength },
      { "Idempotency-Key": `sha256:${sha256(photo)}:${photo.byteLength}` },
    );
    expect(uploads.headers.get("Idempotent-Replayed")).toBe("true");
    const kept = uploads.json.received_bytes as number;
    expect(kept % chunkBytes).toBe(0);
    expect(kept).toBeGreaterThanOrEqual(3 * chunkBytes);
    const resumed = await createEdgeSfmClient({ baseUrl: second.base }).upload(photo, { chunkBytes });
    expect(resumed.blob_sha).toBe(sha256(photo));
    expect(resumed.sent).toBe(photo.byteLength - kept);
    const p = await http("POST", "/v1/projects", { name: "photos" });
    const d = await http("POST", `/v1/projects/${p.json.project_id}/datasets`, {
      name: "d",
      source: { kind: "upload", entries: [{ name: "photo.jpg", blob_sha: resumed.blob_sha }] },
    });
    const image = (await http("GET", `/v1/datasets/${d.json.dataset_id}/images`)).json.items[0];
    expect(image).toMatchObject({ content_sha: sha256(photo), byte_size: photo.byteLength });
    expect(sha256((await http("GET", `/v1/images/${image.image_id}/bytes`)).raw)).toBe(sha256(photo));
  }, 120_000);

  it("mid job: leases are reclaimed, the job succeeds with one contiguous event log and the snapshot sealed before the crash intact", async () => {
    let base = (await restart()).base;
    const { job_id, recon_id } = await submitJob(base, 12);
    // Killed while a digest runner extracts a shard (after its second image).
    const digest = new DigestRunner({ base, name: "before-crash" });
    await digest.register();
    const shard = (await digest.lease())!;
    expect(shard.task.kind).toBe("extract");
    await expect(digest.work(shard, (done) => void (done === 2 && stack!.kill()))).rejects.toThrow();

    base = (await restart()).base;
    const after = new DigestRunner({ base, name: "after-crash", stages: ["extract", "match", "verify"] });
    await after.register();
    // The orphaned shard is offered again once its lease has expired; the first three stages finish.
    for (;;) {
      const next = await after.lease();
      if (next) {
        await after.work(next);
        continue;
      }
      const tasks = (await httpClient(base)("GET", `/v1/jobs/${job_id}`)).json.tasks as { kind: string; status: string }[];
      if (tasks.filter((t) => t.kind !== "map").every((t) => t.status === "succeeded")) break;
      await sleep(200);
    }

    // The map task seals snapshot 1, then the stack dies with the lease held.
    const sent = new Map<number, SnapshotSeal>();
    let mapper = await mapRunner(base);
    const lease = await leaseSoon(mapper.client, mapper.runnerId);
    expect(lease.task.kind).toBe("map");
    const one = await sealBody(mapper.client, lease.lease_id, 20);
    sent.set(20, one);
    expect((await mapper.client.sealSnapshot(lease.lease_id, one)).snapshot_seq).toBe(1);
    await mapper.client.postEvents(lease.lease_id, [
      { kind: "phase_progress", phase: "incremental_register", current: 3, total: 12, rate: null },
    ]);

    base = (await restart()).base;
    expect(await checkSnapshots(base, recon_id, sent)).toEqual([1]);
    mapper = await mapRunner(base);
    const again = await leaseSoon(mapper.client, mapper.runnerId);
    expect(again.task).toMatchObject({ kind: "map", attempt: 2 });
    const two = await sealBody(mapper.client, again.lease_id, 30);
    sent.set(30, two);
    expect((await mapper.client.sealSnapshot(again.lease_id, two)).snapshot_seq).toBe(2);
    await mapper.client.complete(again.lease_id, { artifacts: [], result: null });

    const job = (await httpClient(base)("GET", `/v1/jobs/${job_id}`)).json;
    expect(job.status).toBe("succeeded");
    expect(job.tasks.find((t: any) => t.kind === "map").attempts).toBe(2);
    expect(await checkSnapshots(base, recon_id, sent)).toEqual([1, 2]);
    const events = await eventLog(createEdgeSfmClient({ baseUrl: base }), job_id);
    expect(events.filter((e) => e.kind === "snapshot_available").map((e) => e.snapshot_seq)).toEqual([1, 2]);
    expect(events.filter((e) => e.kind === "warning" && /queued again/.test(e.message)).length).toBeGreaterThanOrEqual(2);
    expect(events.at(-1)).toMatchObject({ kind: "job_status", status: "succeeded" });
  }, 240_000);

  it("mid snapshot seal, over and over: no half-sealed snapshot is ever visible, each sealed one is announced once", async () => {
    let base = (await restart()).base;
    const { job_id, recon_id } = await submitJob(base, 3);
    const digest = new DigestRunner({ base, name: "stages", stages: ["extract", "match", "verify"] });
    await digest.register();
    while ((await digest.drain()) > 0);
    const sent = new Map<number, SnapshotSeal>();
    let points = 10;
    for (let crash = 0; crash < 2; crash++) {
      const mapper = await mapRunner(base);
      const lease = await leaseSoon(mapper.client, mapper.runnerId);
      // A few seals, the last one cut short at a random moment by the crash.
      for (let i = 0; i < 3; i++) {
        const body = await sealBody(mapper.client, lease.lease_id, ++points);
        sent.set(points, body);
        if (i < 2) await mapper.client.sealSnapshot(lease.lease_id, body);
        else {
          const sealing = mapper.client.sealSnapshot(lease.lease_id, body).catch(() => null);
          await sleep(Math.random() * 30);
          stack!.kill();
          await sealing;
        }
      }
      base = (await restart()).base;
      await checkSnapshots(base, recon_id, sent);
    }
    const mapper = await mapRunner(base);
    const last = await leaseSoon(mapper.client, mapper.runnerId);
    const body = await sealBody(mapper.client, last.lease_id, ++points);
    sent.set(points, body);
    await mapper.client.sealSnapshot(last.lease_id, body);
    await mapper.client.complete(last.lease_id, { artifacts: [], result: null });
    const seqs = await checkSnapshots(base, recon_id, sent);
    const events = await eventLog(createEdgeSfmClient({ baseUrl: base }), job_id);
    expect(events.filter((e) => e.kind === "snapshot_available").map((e) => e.snapshot_seq)).toEqual(seqs);
  }, 300_000);

  it("mid one-shot request: the job's alarm leaves no row and no R2 object of it, and its task is offered no more", async () => {
    const base = (await restart()).base;
    const photo = new Uint8Array(readFileSync(new URL("images/01.jpg", datasetDir("opensfm-lund"))));
    const runner = await mapRunner(base, ["oneshot_features"]);
    const started = Date.now();
    let answered = false;
    const request = fetch(`${base}/v1/oneshot/features`, { method: "POST", body: photo, headers: { "Content-Type": "image/jpeg" } })
      .then(() => (answered = true))
      .catch(() => null);
    // The runner takes the task and writes its output (the job's second R2 object); the stack dies with the request waiting.
    const lease = await leaseSoon(runner.client, runner.runnerId);
    expect(lease.task.kind).toBe("oneshot_features");
    const jobId = lease.task.job_id;
    await runner.client.writeBlob(lease.lease_id, enc({ features: "partial" }), "application/octet-stream");
    stack!.kill();
    await request;
    expect(answered, "the request was still waiting when the stack died").toBe(false);

    const prefix = `t/default/oneshot/${jobId}/`;
    const dataRows = (rows: Record<string, number>) => Object.entries(rows).filter(([table, n]) => table !== "_migrations" && n > 0);
    let state = await openPersistedState(dir);
    try {
      // Left by the crash: the photo and the runner's output, and the job's rows.
      expect(await state.blobKeys(prefix)).toHaveLength(2);
      expect(dataRows(await state.jobRows("default", jobId)).length).toBeGreaterThan(0);
    } finally {
      await state.dispose();
    }

    const again = await restart();
    // Past the alarm (created + timeout + 10 s) and a lease TTL more, before which the orphaned task could be offered again.
    await sleep(Math.max(0, started + (ONESHOT_TIMEOUT_SECONDS + 10 + 3) * 1000 - Date.now()));
    const later = await mapRunner(again.base, ["oneshot_features"]);
    expect(await later.client.lease(later.runnerId)).toBeNull();
    // Never indexed in the tenant: no job row, before or after.
    const jobs = (await httpClient(again.base)("GET", "/v1/jobs?page_size=500")).json.items as { job_id: string }[];
    expect(jobs.map((j) => j.job_id)).not.toContain(jobId);
    again.kill();
    state = await openPersistedState(dir);
    try {
      expect(await state.blobKeys(prefix)).toEqual([]);
      expect(dataRows(await state.jobRows("default", jobId))).toEqual([]);
    } finally {
      await state.dispose();
    }
  }, 180_000);
});
