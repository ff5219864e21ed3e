/**
 * @module Sealed snapshots (spec 2.10, 3.5) and reconstruction-level files (2.14): how a map
 * task's seal is checked before anything is recorded, and how sealed files are read back
 * (4.9), including the observations sidecar computed from images.json.
 *
 * Sealing is our runner-protocol extension (reference-only): the runner uploads each file as a
 * blob under its lease, then names them in one seal request. Every check runs before the one
 * write, so a refused seal leaves nothing behind.
 */
import type { ReconstructionFileName, SnapshotSeal, StageArtifact } from "../../protocol";
import { POINT_DESCRIPTORS_FILE, POINT_DESCRIPTORS_MEDIA_TYPE } from "../../protocol/wire/point-descriptors";
import { POINTS_MEDIA_TYPE } from "../../protocol/wire/points";
import { conflict, type FieldError, notFound, validation } from "../errors";
import type { ReconRow, StoredFile, SubmodelRow } from "../storage/tenant-rows";
import { artifactResource } from "./artifacts";
import { serveBytes } from "./bytes";
import { fileProblem, modelProblem } from "./snapshot-files";
import { hashJson } from "./runtime";
import { leaseScopeOf, leaseStore } from "./runners";
import { type DispatchScope, tenantStore, unwrap } from "./stores";

interface LeaseRef {
  scope: DispatchScope;
  leaseId: string;
}

/** The lease's JobStore, tenant and task, for a task of one of `kinds` in a job that drives a reconstruction. */
async function leasedTask(env: Env, ref: LeaseRef, kinds: readonly string[], what: string) {
  const { store, tenant } = leaseStore(env, ref.scope, ref.leaseId);
  const ls = leaseScopeOf(ref.scope);
  const task = unwrap(await store.leaseTask(ref.leaseId, ls));
  if (!kinds.includes(task.kind)) throw conflict(`a ${task.kind} task's lease cannot write ${what}: only ${kinds.join(", ")} tasks do`);
  if (!task.recon_id) throw conflict(`job ${task.job_id} drives no reconstruction (only pipelines do, 4.7)`);
  return { store, ls, tenant, task: { ...task, recon_id: task.recon_id } };
}

/** A file the request names; `path` is its place in the body ("" when the body is the file reference itself). */
type Cited = { path: string; name: string; blob_sha: string; byte_size: number };
const at = (path: string, field: string) => (path ? `${path}.${field}` : field);

/**
 * The blobs the request cites, checked: readable by the lease (uploaded under its job, or an
 * input of it), of the declared size, and valid as the file they are named as. Answers the
 * field errors (empty when all pass) and the bytes read, by field path.
 */
async function checkCited(env: Env, ctx: Awaited<ReturnType<typeof leasedTask>>, leaseId: string, cited: Cited[]) {
  const tenant = tenantStore(env, ctx.tenant);
  const bytes = new Map<string, Uint8Array>();
  const errors = await Promise.all(
    cited.map(async (f): Promise<FieldError | null> => {
      const blob = (await ctx.store.mayRead(leaseId, ctx.ls, f.blob_sha)) ? await tenant.getBlob(f.blob_sha) : null;
      if (!blob)
        return { path: at(f.path, "blob_sha"), message: "no blob with this sha was uploaded under this lease's job", code: "unknown_blob" };
      if (blob.size !== f.byte_size)
        return { path: at(f.path, "byte_size"), message: `the blob has ${blob.size} bytes`, code: "size_mismatch" };
      const obj = await env.BLOBS.get(blob.r2_key);
      if (!obj) return { path: at(f.path, "blob_sha"), message: "the blob's bytes are gone", code: "unknown_blob" };
      const content = new Uint8Array(await obj.arrayBuffer());
      bytes.set(f.path, content);
      const problem = fileProblem(f.name, content);
      return problem ? { path: f.path || "blob_sha", message: `${f.name}: ${problem}`, code: "invalid_file" } : null;
    }),
  );
  return { errors: errors.filter((e): e is FieldError => e !== null), bytes };
}

/** Each model's files (the root's, each component's) checked against each other. */
function inconsistencies(body: SnapshotSeal, bytes: ReadonlyMap<string, Uint8Array>): FieldError[] {
  const models = [
    { path: "files", files: body.files },
    ...body.submodels.map((m, j) => ({ path: `submodels.${j}.files`, files: m.files })),
  ];
  return models.flatMap((m) => {
    const problem = modelProblem(new Map(m.files.map((f, i) => [f.name, bytes.get(`${m.path}.${i}`)!])));
    return problem ? [{ path: m.path, message: problem, code: "inconsistent" }] : [];
  });
}

function duplicates(names: string[], path: (i: number) => string, code: string): FieldError[] {
  return names.flatMap((n, i) => (names.indexOf(n) !== i ? [{ path: path(i), message: `'${n}' appears twice`, code }] : []));
}

/** The task kinds that seal snapshots: a pipeline's mapping, and the reconstruction-level stages that seal a new one from a sealed one (4.9, 4.13). */
const SEALING_TASKS = ["map", "to_cubemap", "georegister", "merge"] as const;

/**
 * Seals the next snapshot of the lease's reconstruction and announces it (6 rule 5). 422 when
 * any file is unknown, of another size or invalid, or a name repeats; 409 when the lease is not a
 * map task's of a pipeline job or is no longer held. Nothing is recorded unless all checks pass.
 */
export async function sealSnapshot(env: Env, ref: LeaseRef, body: SnapshotSeal) {
  const ctx = await leasedTask(env, ref, SEALING_TASKS, "snapshots");
  const cited: Cited[] = [
    ...body.files.map((f, i) => ({ ...f, path: `files.${i}` })),
    ...body.submodels.flatMap((m, j) => m.files.map((f, i) => ({ ...f, path: `submodels.${j}.files.${i}` }))),
  ];
  const errors = [
    ...duplicates(
      body.files.map((f) => f.name),
      (i) => `files.${i}.name`,
      "duplicate",
    ),
    ...duplicates(
      body.submodels.map((m) => String(m.idx)),
      (j) => `submodels.${j}.idx`,
      "duplicate",
    ),
    ...body.submodels.flatMap((m, j) =>
      duplicates(
        m.files.map((f) => f.name),
        (i) => `submodels.${j}.files.${i}.name`,
        "duplicate",
      ),
    ),
  ];
  if (errors.length === 0) {
    const checked = await checkCited(env, ctx, ref.leaseId, cited);
    errors.push(...checked.errors);
    if (errors.length === 0) errors.push(...inconsistencies(body, checked.bytes));
  }
  if (errors.length > 0) throw validation("the snapshot cannot be sealed: nothing was recorded", errors);

  // A seal without components is a single model: component 0 is the root.
  const components = body.submodels.length > 0 ? body.submodels : [{ idx: 0, files: [], summary: body.summary }];
  const sealed = unwrap(
    await tenantStore(env, ctx.tenant).sealSnapshot({
      recon_id: ctx.task.recon_id,
      job_id: ctx.task.job_id,
      task_id: ctx.task.task_id,
      lease_id: ref.leaseId,
      digest: hashJson(body),
      manifest_hash: ctx.task.manifest_hash,
      summary_json: JSON.stringify(body.summary),
      files: [
        ...body.files.map((f) => ({ component: -1, name: f.name, sha: f.blob_sha, size: f.byte_size })),
        ...body.submodels.flatMap((m) => m.files.map((f) => ({ component: m.idx, name: f.name, sha: f.blob_sha, size: f.byte_size }))),
      ],
      components: components.map((m) => ({
        idx: m.idx,
        num_reg_images: m.summary.num_reg_images,
        num_points3D: m.summary.num_points3D,
        summary_json: JSON.stringify(m.summary),
      })),
    }),
  );
  // Announced with any seal of the job whose announcement the Worker died before making (6 rule 5: every readable snapshot is announced).
  unwrap(
    await ctx.store.announceSnapshots(
      ref.leaseId,
      ctx.ls,
      await tenantStore(env, ctx.tenant).snapshotsSealedBy(ctx.task.recon_id, ctx.task.job_id),
    ),
  );
  const self = `/v1/reconstructions/${ctx.task.recon_id}`;
  return {
    recon_id: ctx.task.recon_id,
    snapshot_seq: sealed.seq,
    created: sealed.created,
    _links: { reconstruction: { href: self }, snapshot: { href: `${self}/snapshots/${sealed.seq}/summary.json` } },
  };
}

/** Writes a reconstruction-level file (2.14) from a blob uploaded under a match, verify or map task's lease. */
export async function putReconstructionFile(
  env: Env,
  ref: LeaseRef,
  name: ReconstructionFileName,
  blob: { blob_sha: string; byte_size: number },
) {
  const ctx = await leasedTask(env, ref, ["match", "verify", "map"], name);
  const { errors } = await checkCited(env, ctx, ref.leaseId, [{ path: "", name, ...blob }]);
  if (errors.length > 0) throw validation(`the blob cannot be ${name}`, errors);
  unwrap(await tenantStore(env, ctx.tenant).putReconFile(ctx.task.recon_id, name, { sha: blob.blob_sha, size: blob.byte_size }));
  return { recon_id: ctx.task.recon_id };
}

// ---- reads (4.9) ----

const link = (href: string) => ({ href });

export function reconstructionResource(r: ReconRow) {
  const self = `/v1/reconstructions/${r.recon_id}`;
  return {
    recon_id: r.recon_id,
    project_id: r.project_id,
    dataset_id: r.dataset_id,
    dataset_snapshot_hash: r.dataset_snapshot_hash,
    spec: JSON.parse(r.spec_json),
    rv_id: r.rv_id,
    status: r.status,
    created_at: r.created_at,
    "x-job_id": r.job_id,
    _links: {
      self: link(self),
      submodels: link(`${self}/submodels`),
      snapshots: link(`${self}/snapshots`),
      job: link(`/v1/jobs/${r.job_id}`),
      project: link(`/v1/projects/${r.project_id}`),
      two_view_geometries: link(`${self}/two_view_geometries.json`),
      correspondence_graph: link(`${self}/correspondence_graph.json`),
    },
  };
}

export function submodelResource(r: SubmodelRow) {
  const recon = `/v1/reconstructions/${r.recon_id}`;
  const sealed = `${recon}/snapshots/${r.snapshot_seq}/submodels/${r.idx}/`;
  return {
    submodel_id: r.submodel_id,
    recon_id: r.recon_id,
    idx: r.idx,
    parent_submodel_id: r.parent_submodel_id,
    summary: JSON.parse(r.summary_json),
    rigidity: r.rigidity_json ? JSON.parse(r.rigidity_json) : null,
    snapshot_seq: r.snapshot_seq,
    sealed_path: sealed,
    created_at: r.created_at,
    _links: { self: link(`/v1/submodels/${r.submodel_id}`), reconstruction: link(recon), files: link(sealed) },
  };
}

/** The reconstruction, or 404 (absent, or another tenant's: 5.3). */
export async function reconstructionOf(env: Env, tenantId: string, reconId: string): Promise<ReconRow> {
  const r = await tenantStore(env, tenantId).getReconstruction(reconId);
  if (!r) throw notFound("reconstruction");
  return r as ReconRow;
}

/**
 * The sealed snapshot `seq` (default the latest) of a reconstruction as a job's input artifacts:
 * `snapshot` (the root) and `submodel.<idx>` per component it has. 409 before any snapshot is
 * sealed (`verb` says what to wait for), 404 an unknown seq.
 */
export async function snapshotInputs(env: Env, tenantId: string, reconId: string, seq: number | undefined, verb: string) {
  const tenant = tenantStore(env, tenantId);
  const seqs: number[] = (await tenant.snapshotSeqs(reconId)) ?? [];
  const chosen = seq ?? seqs.at(-1);
  if (chosen === undefined)
    throw conflict(`reconstruction ${reconId} has no sealed snapshot yet: ${verb} it once snapshot_available was announced`);
  if (!seqs.includes(chosen)) throw notFound(`snapshot ${chosen} of reconstruction ${reconId}`);
  const root = await tenant.snapshotArtifact(reconId, chosen, null);
  if (!root) throw notFound(`snapshot ${chosen}`);
  const input_artifacts: Record<string, StageArtifact> = { snapshot: artifactResource(root) };
  const submodels: number[] = [];
  for (const m of unwrap(await tenant.listSubmodels(reconId, { page_size: 500 })).items) {
    const row = await tenant.snapshotArtifact(reconId, chosen, m.idx);
    if (!row) continue;
    input_artifacts[`submodel.${m.idx}`] = artifactResource(row);
    submodels.push(m.idx);
  }
  return { seq: chosen, input_artifacts, submodels, root: input_artifacts.snapshot! };
}

/** Where a file of a snapshot is read: the root (the largest model, 2.8 rule 2) or component `idx`. */
export interface SnapshotAddress {
  tenantId: string;
  reconId: string;
  seq: number;
  idx: number | null;
}

/** A sealed file, or 404 naming what is missing: the reconstruction, the snapshot, the component or the file. */
export async function sealedFile(env: Env, a: SnapshotAddress, name: string): Promise<StoredFile> {
  const tenant = tenantStore(env, a.tenantId);
  await reconstructionOf(env, a.tenantId, a.reconId);
  const file = await tenant.snapshotFile(a.reconId, a.seq, a.idx, name);
  if (file) return file;
  if (!(await tenant.hasSnapshot(a.reconId, a.seq, a.idx)))
    throw notFound(a.idx === null ? `snapshot ${a.seq}` : `component ${a.idx} of snapshot ${a.seq}`);
  throw notFound(`${name} in snapshot ${a.seq}`);
}

export const mediaTypeOf = (name: string) =>
  name === POINT_DESCRIPTORS_FILE ? POINT_DESCRIPTORS_MEDIA_TYPE : name.endsWith(".bin") ? POINTS_MEDIA_TYPE : "application/json";

/** Sealed bytes with the spec's caching (4 rules 1-3): strong ETag (the blob sha), 304, Range, a year's immutable caching. */
export function serveSealed(env: Env, req: Request, file: StoredFile, download: boolean, immutable = true): Promise<Response> {
  return serveBytes(env.BLOBS, req, {
    key: file.r2_key,
    size: file.size,
    etag: `"${file.sha}"`,
    contentType: mediaTypeOf(file.name),
    cache: { immutable, shared: true },
    downloadName: download ? file.name.replaceAll("/", "_") : undefined,
  });
}

export async function readJson<T>(env: Env, file: StoredFile): Promise<T> {
  const obj = await env.BLOBS.get(file.r2_key);
  if (!obj) throw notFound(file.name);
  return obj.json<T>();
}
