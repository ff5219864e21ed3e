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
import { MAX_ARTIFACT_FILES } from "../../../protocol/artifacts";
import { EXPORT_ARTIFACT_TYPES, type ExportArtifactType, type ExportFormat } from "../../../protocol/exports";
import { exportColmapBinary } from "./colmap-bin";
import { exportColmapText } from "./colmap-text";
import { buildExportModel, ExportError, type ExportModel, type SnapshotInput } from "./export-model";
import { exportGaussianSplatting } from "./gaussian-splatting";
import { type ImageBytes, PHOTO_DIRECTORY, type PhotoPlacement, placePhotos } from "./image-files";
import { exportInstantNgp, INSTANT_NGP_DEFAULT_AABB_SCALE } from "./instant-ngp";
import { exportKapture, KAPTURE_DEFAULT_KEYPOINTS_TYPE, KAPTURE_FIXED_FILES } from "./kapture";
import { exportNerfstudio } from "./nerfstudio";
import { exportNvm } from "./nvm";
import { exportPly } from "./ply";

export { buildExportModel, ExportError, type ExportModel, type SnapshotInput } from "./export-model";
export {
  EXPORT_ARTIFACT_TYPES,
  EXPORT_FORMATS,
  type ExportArtifactType,
  type ExportFormat,
  exportCapability,
} from "../../../protocol/exports";
export { PHOTO_DIRECTORY, type ImageBytes, type PhotoPlacement } from "./image-files";

export interface ExportOptions {
  /**
   * The photos of formats that carry them (nerfstudio, instant_ngp, gaussian_splatting, kapture):
   * their bytes by image name, copied into `files`; or `"referenced"`: listed in `photos` for the
   * caller to add (the export task references the dataset's own blobs). Omitted: a warning says
   * where they go.
   */
  photos?: ImageBytes | "referenced";
  /**
   * The most files the result may hold, photos included (default MAX_ARTIFACT_FILES, what one
   * artifact lists): kapture then packs its per-image keypoint files into keypoints.tar, and
   * photos that would still not fit are left out with a warning.
   */
  maxFiles?: number;
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
  /** With `photos: "referenced"`: where each photo goes, for the caller to add. */
  photos: PhotoPlacement[];
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
  const maxFiles = options.maxFiles ?? MAX_ARTIFACT_FILES;
  const photoCount = PHOTO_DIRECTORY[format] && options.photos !== undefined ? model.images.length : 0;
  const packKeypoints = format === "kapture" && KAPTURE_FIXED_FILES + model.images.length + photoCount > maxFiles;
  const files = writeFormat(format, model, { ...options, packKeypoints }, warnings);
  const photos = placePhotos(format, model, files, options.photos, maxFiles, warnings);
  if (files.size > maxFiles)
    throw new ExportError("too_many_files", `the ${format} export has ${files.size} files, more than the ${maxFiles} an artifact lists`);
  return {
    format,
    files,
    photos,
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

const FILE_MEDIA_TYPES: Record<string, string> = {
  txt: "text/plain",
  nvm: "text/plain",
  json: "application/json",
  ply: "application/x-ply",
  tar: "application/x-tar",
};

/** The media type of an export's file, by its extension (COLMAP .bin models and kapture .kpt are raw bytes). */
export const exportFileMediaType = (path: string) => FILE_MEDIA_TYPES[path.split(".").at(-1)!.toLowerCase()] ?? "application/octet-stream";

/** The entry point for the export task: one snapshot, one format. Throws ExportError on refusal. */
export function exportSnapshot(format: ExportFormat, snapshot: SnapshotInput, options: ExportOptions = {}): ExportResult {
  return exportModel(format, buildExportModel(snapshot), options);
}

function writeFormat(
  format: ExportFormat,
  model: ExportModel,
  options: ExportOptions & { packKeypoints: boolean },
  warnings: string[],
): Map<string, Uint8Array> {
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
      return exportNerfstudio(model);
    case "instant_ngp":
      return exportInstantNgp(model, { aabbScale: options.aabbScale ?? INSTANT_NGP_DEFAULT_AABB_SCALE });
    case "gaussian_splatting":
      return exportGaussianSplatting(model, options, warnings);
    case "kapture":
      return exportKapture(model, {
        keypointsType: options.keypointsType ?? KAPTURE_DEFAULT_KEYPOINTS_TYPE,
        packKeypoints: options.packKeypoints,
      });
  }
}
