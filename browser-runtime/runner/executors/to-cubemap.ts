/**
 * @module Executor of `to_cubemap` tasks (spec 4.13): a sealed snapshot of a spherical
 * reconstruction (its root and each component, the job's input artifacts `snapshot` and
 * `submodel.<idx>`) sealed again with every panorama as a cubemap rig (stages/cubemap-rig.ts):
 * new cameras.json, images.json, rigs.json and frames.json; the points files and summary as they
 * were. Completes with the root's files as a `reconstruction.snapshot` artifact.
 */
import {
  CamerasFile,
  ImagesFile,
  type SnapshotSeal,
  type StageArtifact,
  type TaskOutputs,
  type ToCubemapTaskParams,
  defaultFaceSize,
} from "../../../protocol";
import { cubemapRigModel } from "../../stages/cubemap-rig";
import { type OutputFile, type TaskContext, TaskValidationError } from "../task-context";
import { coreArtifact } from "./artifact";

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
/** The files a snapshot model keeps as they are. */
const KEPT = ["summary.json", "points.bin", "points_preview.bin"] as const;

async function convertModel(
  ctx: TaskContext,
  artifact: StageArtifact,
  faceSize: number | null,
): Promise<{ files: OutputFile[]; faceSize: number }> {
  const file = (name: string) => artifact.files.find((f) => f.path === name);
  const read = async (name: string) => {
    const f = file(name);
    if (!f) throw new TaskValidationError(`the snapshot has no ${name}`);
    return ctx.read(f.blob_sha);
  };
  const text = new TextDecoder();
  const cameras = CamerasFile.parse(JSON.parse(text.decode(await read("cameras.json"))));
  const images = ImagesFile.parse(JSON.parse(text.decode(await read("images.json"))));
  const panoramas = cameras.cameras.filter((c) => c.model === "SPHERICAL");
  if (panoramas.length === 0) throw new TaskValidationError("the snapshot holds no SPHERICAL camera: nothing to convert to cubemap rigs");
  const size = faceSize ?? defaultFaceSize(panoramas.map((c) => c.width));
  const rig = cubemapRigModel({ cameras, images }, size);
  const files = [
    await ctx.write("cameras.json", json(rig.cameras), "application/json"),
    await ctx.write("images.json", json(rig.images), "application/json"),
    await ctx.write("rigs.json", json(rig.rigs), "application/json"),
    await ctx.write("frames.json", json(rig.frames), "application/json"),
  ];
  // Written again under this job (the seal takes this job's blobs); the bytes are the same.
  for (const name of KEPT)
    if (file(name)) files.push(await ctx.write(name, await read(name), file(name)!.media_type ?? "application/octet-stream"));
  return { files, faceSize: size };
}

const sealed = (files: OutputFile[]) =>
  files.map((f) => ({ name: f.path as "cameras.json", blob_sha: f.blob_sha, byte_size: f.byte_size }));

export async function toCubemap(ctx: TaskContext): Promise<TaskOutputs> {
  const { to_cubemap: params } = ctx.params as ToCubemapTaskParams;
  const artifacts = ctx.lease.inputs.artifacts;
  const root = artifacts.snapshot;
  if (!root) throw new Error("the lease carries no 'snapshot' input");
  const converted = await convertModel(ctx, root, params.face_size);
  const submodels: SnapshotSeal["submodels"] = [];
  for (const idx of params.submodels) {
    await ctx.cancelPoint();
    const component = artifacts[`submodel.${idx}`];
    if (!component) continue;
    const { files } = await convertModel(ctx, component, converted.faceSize);
    submodels.push({
      idx,
      files: sealed(files),
      summary: { num_reg_images: 0, num_points3D: 0, ...component.summary } as SnapshotSeal["submodels"][number]["summary"],
    });
  }
  const summary = {
    num_reg_images: 0,
    num_points3D: 0,
    ...root.summary,
    phase: "to_cubemap",
    face_size: converted.faceSize,
  } as SnapshotSeal["summary"];
  const seq = await ctx.sealSnapshot({ files: sealed(converted.files), submodels, summary });
  ctx.log("INFO", `sealed snapshot ${seq}: snapshot ${params.seq} with its panoramas as cubemap rigs of ${converted.faceSize}-pixel faces`);
  return {
    artifacts: [
      coreArtifact("reconstruction.snapshot", `snapshot ${params.seq} as cubemap rigs`, converted.files, {
        source_seq: params.seq,
        snapshot_seq: seq,
        face_size: converted.faceSize,
      }),
    ],
    result: { snapshot_seq: seq, face_size: converted.faceSize },
  };
}
