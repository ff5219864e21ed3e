/**
 * @module Executors of `export` tasks (spec 1.2 `export.*`, task kind and phase `export`) and
 * `convert_artifact` tasks (4.10 `:convert`): the source artifact, a sealed snapshot or submodel
 * for an export, goes through each step of the conversion graph (protocol/exports.ts) inside this
 * one task, each step's files feeding the next (4.10 rule 2); the last step's files are uploaded
 * as the task's one artifact. Photos of photo-carrying formats are the dataset's own blobs, listed
 * in the artifact and never copied. A refusal of the converters (ExportError: a camera the format
 * cannot hold, a snapshot that contradicts itself) fails the task with a ValidationError.
 */
import {
  type ArtifactDescriptor,
  type ConversionEdge,
  ConvertTaskParams,
  EXPORT_ARTIFACT_TYPES,
  type ExportOptions,
  ExportTaskParams,
  type StageArtifact,
  type TaskOutputs,
} from "../../../protocol";
import { CamerasFile, ImagesFile } from "../../../protocol/schemas/snapshot";
import { ExportError, exportFileMediaType, exportSnapshot } from "../../stages/export";
import { snapshotFromColmapText } from "../../stages/export/from-colmap";
import { type OutputFile, type TaskContext, TaskValidationError } from "../task-context";

/** A step's input: its files by path, each read on demand. */
type Files = Map<string, () => Promise<Uint8Array>>;

/** What a step produced: files in memory, photos to list from the dataset, and what to say about them. */
interface StepResult {
  files: Map<string, Uint8Array>;
  photos: { path: string; image_name: string }[];
  summary: Record<string, unknown>;
  warnings: string[];
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** The file of `files` named `name` (at any depth: an imported model may sit under `sparse/0/`). */
async function fileNamed(files: Files, name: string, what: string): Promise<Uint8Array> {
  const path = [...files.keys()].find((p) => p === name || p.endsWith(`/${name}`));
  if (!path) throw new TaskValidationError(`the ${what} has no ${name}`);
  return files.get(path)!();
}

async function jsonFile<T>(files: Files, name: string, parse: (v: unknown) => T): Promise<T> {
  try {
    return parse(JSON.parse(decoder.decode(await fileNamed(files, name, "snapshot"))));
  } catch (e) {
    if (e instanceof TaskValidationError) throw e;
    throw new TaskValidationError(`the snapshot's ${name} is invalid: ${(e as Error).message}`);
  }
}

async function runStep(step: ConversionEdge, input: Files, options: ExportOptions, photos: boolean): Promise<StepResult> {
  if ("from_colmap_text" in step.via) {
    const text = async (name: string) => decoder.decode(await fileNamed(input, name, "COLMAP text model"));
    const snapshot = snapshotFromColmapText({
      cameras: await text("cameras.txt"),
      images: await text("images.txt"),
      points3D: await text("points3D.txt"),
    });
    const files = new Map([
      ["cameras.json", encoder.encode(JSON.stringify(snapshot.cameras))],
      ["images.json", encoder.encode(JSON.stringify(snapshot.images))],
      ["points.bin", snapshot.points],
      ["summary.json", encoder.encode(JSON.stringify(snapshot.summary))],
    ]);
    const model = snapshot.summary.models[0]!;
    return {
      files,
      photos: [],
      summary: {
        num_reg_images: model.num_reg_images,
        num_points3D: model.num_points3D,
        mean_reproj_err: snapshot.summary.mean_reproj_err,
      },
      warnings: [],
    };
  }
  const snapshot = {
    cameras: await jsonFile(input, "cameras.json", (v) => CamerasFile.parse(v)),
    images: await jsonFile(input, "images.json", (v) => ImagesFile.parse(v)),
    points: await fileNamed(input, "points.bin", "snapshot"),
  };
  const result = exportSnapshot(step.via.export, snapshot, {
    photos: photos ? "referenced" : undefined,
    allowDistortedCameras: options.allow_distorted_cameras,
    aabbScale: options.aabb_scale,
    keypointsType: options.keypoints_type,
  });
  return { files: result.files, photos: result.photos, summary: result.summary, warnings: result.warnings };
}

/**
 * Runs `steps` from `source` and answers the outputs with the last step's artifact, its
 * `metadata` extended with `extra`.
 */
async function convertSteps(
  ctx: TaskContext,
  source: StageArtifact,
  steps: readonly ConversionEdge[],
  o: { name: string; options: ExportOptions; metadata: Record<string, unknown> },
): Promise<TaskOutputs> {
  const dataset = ctx.lease.inputs.dataset;
  let input: Files = new Map(source.files.map((f) => [f.path, () => ctx.read(f.blob_sha)]));
  let result: StepResult | null = null;
  ctx.progress(0, steps.length);
  for (const [i, step] of steps.entries()) {
    await ctx.cancelPoint();
    const last = i === steps.length - 1;
    try {
      result = await runStep(step, input, o.options, last && o.options.include_images && dataset !== null);
    } catch (e) {
      if (e instanceof ExportError) throw new TaskValidationError(`${step.to_format} refused (${e.code}): ${e.message}`);
      throw e;
    }
    const made = result.files;
    input = new Map([...made].map(([path, bytes]) => [path, async () => bytes]));
    ctx.progress(i + 1, steps.length);
  }
  const final = result!;
  const step = steps.at(-1)!;
  const warnings = [...final.warnings];
  if (o.options.include_images && !dataset && "export" in step.via && final.photos.length === 0) {
    warnings.push("photos not included: the source artifact belongs to no dataset");
  }
  const files: OutputFile[] = [];
  for (const [path, bytes] of final.files) files.push(await ctx.write(path, bytes, exportFileMediaType(path)));
  const images = new Map(dataset?.images.map((im) => [im.name, im]));
  for (const p of final.photos) {
    const image = images.get(p.image_name);
    if (!image || image.byte_size === null)
      throw new TaskValidationError(`export refused (missing_image): image ${p.image_name} of the snapshot is not in the dataset`);
    files.push({
      path: p.path,
      blob_sha: image.content_sha,
      byte_size: image.byte_size,
      media_type: image.media_type ?? "application/octet-stream",
    });
  }
  for (const w of warnings) ctx.log("WARNING", w);
  const type = "export" in step.via ? EXPORT_ARTIFACT_TYPES[step.via.export] : null;
  const artifact: ArtifactDescriptor = {
    kind: step.to_kind,
    name: o.name,
    uri: null,
    artifact_format: step.to_format,
    schema_version: 1,
    media_type: type?.media_type ?? "application/octet-stream",
    summary: final.summary,
    metadata: { ...o.metadata, source_artifact_id: source.artifact_id, lossless: steps.every((s) => s.lossless), warnings },
    files,
  };
  return { artifacts: [artifact], result: null };
}

export async function exportTask(ctx: TaskContext): Promise<TaskOutputs> {
  const { export: p } = ExportTaskParams.parse(ctx.params);
  const source = ctx.lease.inputs.artifacts.snapshot ?? ctx.lease.inputs.artifacts.submodel;
  if (!source) throw new Error("the export's lease carries no snapshot or submodel artifact");
  const type = EXPORT_ARTIFACT_TYPES[p.format];
  const step: ConversionEdge = {
    from_format: source.artifact_format,
    to_format: type.artifact_format,
    to_kind: type.kind,
    lossless: type.lossless,
    via: { export: p.format },
  };
  return convertSteps(ctx, source, [step], {
    name: p.name,
    options: p.options,
    metadata: { format: p.format, recon_id: p.recon_id, seq: p.seq, submodel_idx: p.submodel_idx },
  });
}

export async function convertArtifact(ctx: TaskContext): Promise<TaskOutputs> {
  const { convert } = ConvertTaskParams.parse(ctx.params);
  const source = ctx.lease.inputs.artifacts.source;
  if (!source) throw new Error("the conversion's lease carries no source artifact");
  return convertSteps(ctx, source, convert.steps, {
    name: convert.name,
    options: convert.options,
    metadata: { steps: convert.steps.map((s) => s.to_format) },
  });
}
