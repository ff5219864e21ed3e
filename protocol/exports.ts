/**
 * @module Exports and artifact conversions (spec 1.2 `export.*`, 2.11, 4.10; issue 8): the
 * formats a sealed snapshot or submodel is exported to, the artifact each produces, the export
 * request and task params, and the conversion graph that `:conversionPlan` searches and the
 * runner's `export` / `convert_artifact` executors walk. One definition for worker and runner.
 */
import { z } from "zod";
import { Id } from "./schemas/common";

/**
 * The spec's export names. `txt` and `bin` are COLMAP's own names for its text and binary models
 * (`colmap model_converter --output_type TXT|BIN`), so they share the writers and format ids of
 * `colmap_text` and `colmap_bin`.
 */
export const EXPORT_FORMATS = [
  "colmap_text",
  "colmap_bin",
  "txt",
  "bin",
  "ply",
  "nvm",
  "nerfstudio",
  "instant_ngp",
  "gaussian_splatting",
  "kapture",
] as const;
export const ExportFormat = z.enum(EXPORT_FORMATS);
export type ExportFormat = z.infer<typeof ExportFormat>;

/** The capability that advertises a format (1.2). */
export const exportCapability = (format: ExportFormat) => `export.${format}` as const;

/** How an export's artifact is typed (2.11 rule 2: non-core formats use namespaced, backend-owned ids, never `svc.*`). */
export interface ExportArtifactType {
  kind: string;
  artifact_format: string;
  media_type: string;
  schema_version: 1;
  /** Whether the export keeps everything the snapshot holds that the format can name (cameras, poses, tracks, colours). */
  lossless: boolean;
}

const COLMAP_TEXT: ExportArtifactType = {
  kind: "reconstruction.colmap_model",
  artifact_format: "colmap.model.text.v1",
  media_type: "text/plain",
  schema_version: 1,
  lossless: true,
};
const COLMAP_BIN: ExportArtifactType = {
  kind: "reconstruction.colmap_model",
  artifact_format: "colmap.model.binary.v1",
  media_type: "application/octet-stream",
  schema_version: 1,
  lossless: true,
};

export const EXPORT_ARTIFACT_TYPES: Record<ExportFormat, ExportArtifactType> = {
  colmap_text: COLMAP_TEXT,
  txt: COLMAP_TEXT,
  colmap_bin: COLMAP_BIN,
  bin: COLMAP_BIN,
  // Points and colours only: the cameras are dropped.
  ply: {
    kind: "reconstruction.point_cloud",
    artifact_format: "ply.binary_little_endian.v1",
    media_type: "application/x-ply",
    schema_version: 1,
    lossless: false,
  },
  // One radial distortion term per camera.
  nvm: { kind: "reconstruction.nvm", artifact_format: "visualsfm.nvm_v3.v1", media_type: "text/plain", schema_version: 1, lossless: false },
  // Cameras and poses for NeRF training; the sparse points are dropped.
  nerfstudio: {
    kind: "reconstruction.nerf_dataset",
    artifact_format: "nerfstudio.transforms.v1",
    media_type: "application/json",
    schema_version: 1,
    lossless: false,
  },
  instant_ngp: {
    kind: "reconstruction.nerf_dataset",
    artifact_format: "instant_ngp.transforms.v1",
    media_type: "application/json",
    schema_version: 1,
    lossless: false,
  },
  gaussian_splatting: {
    kind: "reconstruction.colmap_model",
    artifact_format: "gaussian_splatting.colmap_binary.v1",
    media_type: "application/octet-stream",
    schema_version: 1,
    lossless: false,
  },
  kapture: {
    kind: "reconstruction.kapture",
    artifact_format: "kapture.v1_1",
    media_type: "text/plain",
    schema_version: 1,
    lossless: false,
  },
};

export const ExportOptions = z
  .object({
    include_images: z
      .boolean()
      .default(true)
      .describe(
        "nerfstudio, instant_ngp, gaussian_splatting, kapture: list the photos in the artifact (the dataset's own blobs: no bytes are copied)",
      ),
    allow_distorted_cameras: z
      .boolean()
      .default(false)
      .describe("gaussian_splatting: keep distorted cameras (with a warning) instead of refusing"),
    aabb_scale: z.number().int().min(1).max(128).default(32).describe("instant_ngp: aabb_scale, a power of two"),
    keypoints_type: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/)
      .default("edgesfm")
      .describe("kapture: the keypoints type directory"),
  })
  .meta({ id: "ExportOptions" });
export type ExportOptions = z.infer<typeof ExportOptions>;

/** `POST /v1/reconstructions/{rid}/export` (our addition, 9.2; the task kind and phase are `export`, 2.9 and 6). */
export const ExportRequest = z
  .object({
    format: ExportFormat,
    seq: z.number().int().min(0).optional().describe("the sealed snapshot to export; default the latest"),
    submodel_idx: z.number().int().min(0).optional().describe("one component (4.9 rule 2); default the root (largest) model"),
    name: z.string().min(1).max(256).optional().describe("the artifact's name; default `<format>`"),
    options: ExportOptions.default(ExportOptions.parse({})),
  })
  .meta({ id: "ExportRequest" });
export type ExportRequest = z.infer<typeof ExportRequest>;

/** An `export` task's params. Its lease carries the snapshot (or submodel) artifact under `inputs.artifacts.snapshot`. */
export const ExportTaskParams = z.object({
  export: z.object({
    format: ExportFormat,
    recon_id: Id,
    seq: z.number().int().min(0),
    submodel_idx: z.number().int().min(0).nullable(),
    name: z.string(),
    options: ExportOptions,
  }),
});
export type ExportTaskParams = z.infer<typeof ExportTaskParams>;

// ---- the conversion graph (4.10) ----

/** The formats of sealed snapshots and submodels as artifacts (2.11 core kinds `reconstruction.snapshot`, `reconstruction.submodel`). */
export const SNAPSHOT_FORMATS = ["svc.reconstruction.snapshot", "svc.reconstruction.submodel"] as const;

/** One step a runner can execute: what it reads, what it writes and how. */
export const ConversionEdge = z
  .object({
    from_format: z.string(),
    to_format: z.string(),
    to_kind: z.string(),
    lossless: z.boolean(),
    /** `export`: the snapshot writers (browser-runtime/stages/export); `from_colmap_text`: a COLMAP text model back to snapshot files. */
    via: z.union([z.object({ export: ExportFormat }), z.object({ from_colmap_text: z.literal(true) })]),
  })
  .meta({ id: "ConversionStep" });
export type ConversionEdge = z.infer<typeof ConversionEdge>;

const canonicalExports = EXPORT_FORMATS.filter((f) => f !== "txt" && f !== "bin");

export const CONVERSIONS: readonly ConversionEdge[] = [
  ...SNAPSHOT_FORMATS.flatMap((from_format) =>
    canonicalExports.map((format): ConversionEdge => {
      const t = EXPORT_ARTIFACT_TYPES[format];
      return { from_format, to_format: t.artifact_format, to_kind: t.kind, lossless: t.lossless, via: { export: format } };
    }),
  ),
  // Positions become float32 in points.bin.
  {
    from_format: COLMAP_TEXT.artifact_format,
    to_format: "svc.reconstruction.snapshot",
    to_kind: "reconstruction.snapshot",
    lossless: false,
    via: { from_colmap_text: true },
  },
];

/** A `convert_artifact` task's params. Its lease carries the source artifact under `inputs.artifacts.source`. */
export const ConvertTaskParams = z.object({
  convert: z.object({
    steps: z.array(ConversionEdge).min(1),
    name: z.string(),
    options: ExportOptions,
  }),
});
export type ConvertTaskParams = z.infer<typeof ConvertTaskParams>;

/** The capability a step needs (1.2), or null when any runner of this service can take it. */
export const conversionCapability = (edge: ConversionEdge) => ("export" in edge.via ? exportCapability(edge.via.export) : null);

const FormatId = z.string().min(3).max(128);

/** `POST /v1/artifacts/{id}:conversionPlan` (4.10). */
export const ConversionPlanRequest = z
  .object({
    to_format: FormatId.optional().describe("the format wanted; first in preference before `accepted_formats`"),
    accepted_formats: z.array(FormatId).min(1).max(64).optional().describe("formats the caller reads, in preference order"),
    to_kind: z.string().min(3).max(128).optional().describe("the kind the result must have"),
    require_lossless: z.boolean().default(false).describe("only steps that keep everything the formats can name"),
  })
  .meta({ id: "ConversionPlanRequest" });
export type ConversionPlanRequest = z.infer<typeof ConversionPlanRequest>;

/** `POST /v1/artifacts/{id}:convert` (4.10): a plan request, plus the result's name and the export options of its steps. */
export const ConvertRequest = ConversionPlanRequest.extend({
  name: z.string().min(1).max(256).optional().describe("the result's name; default `<source name> as <format>`"),
  options: ExportOptions.default(ExportOptions.parse({})),
}).meta({ id: "ConvertRequest" });
export type ConvertRequest = z.infer<typeof ConvertRequest>;

export const ArtifactConversionPlan = z
  .object({
    artifact_id: Id,
    from_format: z.string(),
    to_format: z.string(),
    to_kind: z.string(),
    lossless: z.boolean(),
    steps: z.array(ConversionEdge).describe("in order; empty when the artifact already is in the format"),
  })
  .meta({ id: "ArtifactConversionPlan" });
export type ArtifactConversionPlan = z.infer<typeof ArtifactConversionPlan>;

export type PlanOutcome =
  | { ok: true; to_format: string; to_kind: string; steps: ConversionEdge[] }
  | { ok: false; reason: "no_path" | "lossless_impossible" }
  | { ok: false; reason: "unavailable"; capability: string };

/**
 * The shortest path (fewest steps) over the conversion graph from `from` to any of `targets`
 * (4.10): ties go to the earlier target (`accepted_formats` preference order); `toKind` restricts
 * the result's kind; `requireLossless` uses lossless steps only; `available` says which steps
 * this deployment runs. When no path exists, says why: none at all, none lossless, or one only
 * through a step whose capability is off.
 */
export function planConversion(
  from: { format: string; kind: string },
  o: { targets: readonly string[]; toKind?: string | undefined; requireLossless: boolean; available: (edge: ConversionEdge) => boolean },
): PlanOutcome {
  const search = (edges: readonly ConversionEdge[]) => {
    const via = new Map<string, ConversionEdge | null>([[from.format, null]]);
    const kinds = new Map([[from.format, from.kind]]);
    for (let frontier = [from.format]; frontier.length > 0;) {
      const next: string[] = [];
      for (const format of frontier) {
        for (const edge of edges.filter((e) => e.from_format === format && !via.has(e.to_format))) {
          via.set(edge.to_format, edge);
          kinds.set(edge.to_format, edge.to_kind);
          next.push(edge.to_format);
        }
      }
      frontier = next;
    }
    const depth = (format: string): number => (via.get(format) ? 1 + depth(via.get(format)!.from_format) : 0);
    const reached = o.targets.filter((t) => via.has(t) && (o.toKind === undefined || kinds.get(t) === o.toKind));
    if (reached.length === 0) return null;
    const best = reached.reduce((a, b) => (depth(b) < depth(a) ? b : a));
    const steps: ConversionEdge[] = [];
    for (let e = via.get(best); e; e = via.get(e.from_format)) steps.unshift(e);
    return { ok: true as const, to_format: best, to_kind: kinds.get(best)!, steps };
  };
  const lossless = CONVERSIONS.filter((e) => !o.requireLossless || e.lossless);
  const found = search(lossless.filter(o.available));
  if (found) return found;
  const unavailable = search(lossless);
  if (unavailable)
    return {
      ok: false,
      reason: "unavailable",
      capability: unavailable.steps.map(conversionCapability).find((c, i) => c && !o.available(unavailable.steps[i]!))!,
    };
  if (o.requireLossless && search(CONVERSIONS.filter(o.available))) return { ok: false, reason: "lossless_impossible" };
  return { ok: false, reason: "no_path" };
}
