/**
 * @module Snapshot exports (spec 1.2 export family `export.*`, 2.11 artifacts; issue 8): pure
 * functions from a sealed snapshot's files to an export's files, for the `export` task to store
 * as one StageArtifact. No I/O: runs in browsers, workers and Node alike.
 *
 * `txt` and `bin` are COLMAP's own names for its text and binary models (`colmap
 * model_converter --output_type TXT|BIN`, beside PLY and NVM, which the spec's short names
 * `ply` and `nvm` also mirror), so they are the same writers as `colmap_text` and `colmap_bin`
 * under the flat names a COLMAP user types.
 */
import { EXPORT_ARTIFACT_TYPES, type ExportArtifactType, type ExportFormat } from "../../../protocol/exports";
import { exportColmapBinary } from "./colmap-bin";
import { exportColmapText } from "./colmap-text";
import { buildExportModel, type ExportModel, type SnapshotInput } from "./export-model";
import { exportGaussianSplatting } from "./gaussian-splatting";
import type { ImageBytes } from "./image-files";
import { exportInstantNgp, INSTANT_NGP_DEFAULT_AABB_SCALE } from "./instant-ngp";
import { exportKapture, KAPTURE_DEFAULT_KEYPOINTS_TYPE } from "./kapture";
import { exportNerfstudio } from "./nerfstudio";
import { exportNvm } from "./nvm";
import { exportPly } from "./ply";

export { buildExportModel, ExportError, type ExportModel, type SnapshotInput } from "./export-model";
export { EXPORT_ARTIFACT_TYPES, EXPORT_FORMATS, type ExportArtifactType, type ExportFormat, exportCapability } from "../../../protocol/exports";
export type { ImageBytes } from "./image-files";

export interface ExportOptions {
  /** Photos by image name; copied into formats that carry them (nerfstudio, instant_ngp, gaussian_splatting, kapture). */
  imageBytes?: ImageBytes;
  /** gaussian_splatting: write distorted cameras unchanged (with a warning) instead of refusing. */
  allowDistortedCameras?: boolean;
  /** instant_ngp: aabb_scale (default 32, colmap2nerf's). */
  aabbScale?: number;
  /** kapture: the keypoints type directory name (default "edgesfm"). */
  keypointsType?: string;
}

export interface ExportResult {
  format: ExportFormat;
  /** Relative path -> bytes. */
  files: Map<string, Uint8Array>;
  artifact: ExportArtifactType;
  /** For the artifact's `summary`: what COLMAP's model_analyzer would report. */
  summary: {
    num_cameras: number;
    num_images: number;
    num_points3D: number;
    num_observations: number;
    mean_track_length: number;
    mean_reproj_err: number;
  };
  /** For the artifact's `metadata.warnings`: what a consumer must know (omitted photos, distorted cameras). */
  warnings: string[];
}

export function exportModel(format: ExportFormat, model: ExportModel, options: ExportOptions = {}): ExportResult {
  const warnings: string[] = [];
  const files = writeFormat(format, model, options, warnings);
  return {
    format,
    files,
    artifact: EXPORT_ARTIFACT_TYPES[format],
    summary: {
      num_cameras: model.cameras.length,
      num_images: model.images.length,
      num_points3D: model.points.length,
      num_observations: model.numObservations,
      mean_track_length: model.meanTrackLength,
      mean_reproj_err: model.meanReprojectionError,
    },
    warnings,
  };
}

/** The entry point for the export task: one snapshot, one format. Throws ExportError on refusal. */
export function exportSnapshot(format: ExportFormat, snapshot: SnapshotInput, options: ExportOptions = {}): ExportResult {
  return exportModel(format, buildExportModel(snapshot), options);
}

function writeFormat(format: ExportFormat, model: ExportModel, options: ExportOptions, warnings: string[]): Map<string, Uint8Array> {
  switch (format) {
    case "colmap_text":
    case "txt":
      return exportColmapText(model);
    case "colmap_bin":
    case "bin":
      return exportColmapBinary(model);
    case "ply":
      return exportPly(model);
    case "nvm":
      return exportNvm(model);
    case "nerfstudio":
      return exportNerfstudio(model, options.imageBytes, warnings);
    case "instant_ngp":
      return exportInstantNgp(model, { aabbScale: options.aabbScale ?? INSTANT_NGP_DEFAULT_AABB_SCALE, imageBytes: options.imageBytes }, warnings);
    case "gaussian_splatting":
      return exportGaussianSplatting(model, options, warnings);
    case "kapture":
      return exportKapture(model, { keypointsType: options.keypointsType ?? KAPTURE_DEFAULT_KEYPOINTS_TYPE, imageBytes: options.imageBytes }, warnings);
  }
}
