/**
 * @module Incremental mapping (src/bindings/mapping.cc -> src/sfm/incremental_pipeline.h):
 * spec 2.12 PipelineSpec `incremental` on cameras, keypoints and verified matches, stepped
 * from TypeScript so the caller can publish a snapshot every `snapshot_frames_freq`
 * registrations and checkpoint between steps (a mapping task can resume elsewhere). The same
 * handle maps globally (PipelineSpec `global`, src/sfm/global_mapper.h) in two calls,
 * positioning then refinement, given the images' rotations from rotation averaging.
 */
import { LOSS_KERNELS, type BundleAdjustmentOptions } from "./ba";
import { cameraModelId } from "./camera";
import type { Engine } from "./engine";
import { heapAddress } from "./heap";
import { TWO_VIEW_TYPES, type TwoViewType } from "../../protocol/schemas/snapshot";

export interface MappingCamera {
  model: string;
  width: number;
  height: number;
  params: number[];
  hasPriorFocalLength?: boolean;
}

export interface MappingImage {
  /** Index into `cameras`. */
  camera: number;
  /** Keypoints x0 y0 x1 y1 ... (pixels, COLMAP convention: pixel centres at +0.5). */
  keypoints: Float64Array;
}

export interface MappingPair {
  /** Indices into `images`. */
  image1: number;
  image2: number;
  /** Verified matches: keypoint index pairs (i in image1, j in image2) interleaved. */
  matches: Int32Array;
  type?: TwoViewType;
}

export interface MappingInput {
  cameras: MappingCamera[];
  images: MappingImage[];
  pairs: MappingPair[];
}

/** Spec 2.12 PipelineSpec (incremental) + BundleAdjustmentSpec. */
export interface IncrementalMappingOptions {
  seed?: number;
  snapshot_frames_freq?: number | null;
  /** Image indices. */
  init_image_pair?: [number, number] | null;
  multiple_models?: boolean;
  max_num_models?: number;
  min_num_matches?: number;
  /** Models with fewer registered images than min(this, images) are dropped (COLMAP: 10). */
  min_model_size?: number;
  ba?: BundleAdjustmentOptions;
  /** Initial pair's minimum triangulation angle in degrees (COLMAP: 16). */
  init_min_tri_angle?: number;
  /**
   * Spec 2.12 `spherical` (`panorama: true`): SPHERICAL images are adjusted as cubemap rigs with
   * faces of this many pixels (residuals on the face each keypoint was found on, the six faces
   * moving as one). 0 or absent: off.
   */
  cubemap_rig_face_size?: number;
  /**
   * Pose priors (spec 4.12): global bundle adjustments align each model to them (a similarity on
   * the camera centres, COLMAP 3.10's pose-prior mapper) and keep them as soft constraints, so the
   * models come out in their frame. Needs 3 registered images with priors, not all on one line.
   */
  pose_priors?: MappingPosePrior[];
}

/** What an image's pose is known to be, in the frame the model is to come out in. */
export interface MappingPosePrior {
  /** Index into the input images. */
  image: number;
  /** The prior's cam_from_world rotation, Hamilton [w, x, y, z]. */
  qvec: [number, number, number, number];
  /** The prior's camera centre. */
  centre: [number, number, number];
  /** Row-major 6x6: rotation (axis-angle of world_from_cam, world frame), then the centre (protocol COVARIANCE_ORDER). */
  covariance: number[];
}

export interface MappedImage {
  /** Index into the input images. */
  image: number;
  /** cam_from_world, Hamilton quaternion [w, x, y, z]. */
  qvec: [number, number, number, number];
  tvec: [number, number, number];
}

export interface MappedModel {
  cameras: MappingCamera[];
  /** Registered images in registration order. */
  images: MappedImage[];
  /** xyz per point; a point's id is its index. */
  points: Float64Array;
  /** Per point: track length, then (image index, keypoint index) pairs. */
  tracks: Int32Array;
  /** Mean reprojection error in pixels, COLMAP's definition: the mean over points of each point's mean over its track. */
  meanReprojectionError: number;
}

/** Global positioning's formulation (spec 2.12 `formulation`; src/sfm/global_positioning.h). */
export type PositioningFormulation = "explicit_scale" | "eliminated_scale";

/** What global positioning placed (src/sfm/global_mapper.h GlobalPositioningSummary). */
export interface GlobalPositioningSummary {
  imagesWithRotation: number;
  imagesInComponent: number;
  imagesPositioned: number;
  tracks: number;
  observations: number;
  inlierObservations: number;
}

export type MappingStatus = "done" | "running" | "snapshot";

/** The engine's pipeline phases, by their number: what the next step does. */
export const MAPPING_PHASES = ["start_model", "grow_model", "finish_model", "done"] as const;
export type MappingPhase = (typeof MAPPING_PHASES)[number];

/** Where a mapping run stands: the next step's phase, distinct images held by any model, images that can register at all. */
export interface MappingProgress {
  phase: MappingPhase;
  imagesHeld: number;
  imagesReachable: number;
}

function optionsVector(options: IncrementalMappingOptions): number[] {
  const ba = options.ba ?? {};
  const kernel = LOSS_KERNELS.indexOf(ba.loss_kernel ?? "squared");
  if (kernel < 0) throw new Error(`unknown loss kernel ${ba.loss_kernel}`);
  const pair = options.init_image_pair ?? null;
  return [
    options.seed ?? 0,
    options.snapshot_frames_freq ?? 50,
    pair ? pair[0] : -1,
    pair ? pair[1] : -1,
    (options.multiple_models ?? true) ? 1 : 0,
    options.max_num_models ?? 50,
    options.min_num_matches ?? 15,
    options.min_model_size ?? 10,
    ba.mode === "two_stage" ? 1 : 0,
    (ba.refine_focal_length ?? true) ? 1 : 0,
    (ba.refine_principal_point ?? false) ? 1 : 0,
    (ba.refine_extra_params ?? true) ? 1 : 0,
    ba.max_num_iterations ?? 100,
    kernel,
    ba.loss_threshold ?? 1,
    options.init_min_tri_angle ?? 0,
    options.cubemap_rig_face_size ?? 0,
  ];
}

/** A mapping run in the engine; free() it when done. */
export class IncrementalMapping {
  private handle: number;

  constructor(
    private readonly engine: Engine,
    private readonly input: MappingInput,
    options: IncrementalMappingOptions = {},
  ) {
    const { cameras, images, pairs } = input;
    const keypointCounts = images.map((im) => im.keypoints.length / 2);
    const keypoints = new Float64Array(keypointCounts.reduce((a, b) => a + b, 0) * 2);
    let offset = 0;
    for (const im of images) {
      keypoints.set(im.keypoints, offset);
      offset += im.keypoints.length;
    }
    const matches = new Int32Array(pairs.reduce((a, p) => a + p.matches.length, 0));
    offset = 0;
    for (const p of pairs) {
      matches.set(p.matches, offset);
      offset += p.matches.length;
    }
    this.handle = engine.withHeap((heap) =>
      engine.call(
        "edgesfm_mapping_create",
        cameras.length,
        heap.i32(cameras.map((c) => cameraModelId(engine, c.model))),
        heap.f64(cameras.flatMap((c) => [c.width, c.height])),
        heap.f64(cameras.flatMap((c) => c.params)),
        heap.i32(cameras.map((c) => (c.hasPriorFocalLength ? 1 : 0))),
        images.length,
        heap.i32(images.map((im) => im.camera)),
        heap.i32(keypointCounts),
        heap.f64(keypoints),
        pairs.length,
        heap.i32(pairs.flatMap((p) => [p.image1, p.image2])),
        heap.i32(pairs.map((p) => p.matches.length / 2)),
        heap.i32(matches),
        // The binding takes each type's index in spec 2.14's order (the engine's numbering).
        heap.i32(pairs.map((p) => TWO_VIEW_TYPES.indexOf(p.type ?? "calibrated"))),
        heap.f64(optionsVector(options)),
      ),
    );
    const priors = options.pose_priors ?? [];
    if (priors.length > 0) {
      if (priors.some((p) => p.covariance.length !== 36)) throw new Error("pose priors: a covariance has 36 numbers");
      engine.withHeap((heap) =>
        engine.call(
          "edgesfm_mapping_set_pose_priors",
          this.handle,
          priors.length,
          heap.i32(priors.map((p) => p.image)),
          heap.f64(priors.flatMap((p) => [...p.qvec, ...p.centre, ...p.covariance])),
        ),
      );
    }
  }

  /**
   * Global mapping, first part: places the images of the largest connected part of the view
   * graph among those with a rotation (`rotations`: input image index -> cam_from_world,
   * Hamilton [w, x, y, z]). From then on models() answers the placed model alone.
   */
  globalPosition(rotations: ReadonlyMap<number, readonly number[]>, formulation: PositioningFormulation): GlobalPositioningSummary {
    const entries = [...rotations.entries()];
    const values = this.engine.withHeap((heap) => {
      const out = heap.alloc(24);
      this.engine.call(
        "edgesfm_mapping_global_position",
        this.handle,
        entries.length,
        heap.i32(entries.map(([image]) => image)),
        heap.f64(entries.flatMap(([, q]) => [...q])),
        formulation === "eliminated_scale" ? 1 : 0,
        out,
      );
      return Array.from(this.engine.readI32(out, 6));
    }) as [number, number, number, number, number, number];
    const [imagesWithRotation, imagesInComponent, imagesPositioned, tracks, observations, inlierObservations] = values;
    return { imagesWithRotation, imagesInComponent, imagesPositioned, tracks, observations, inlierObservations };
  }

  /** Global mapping, second part: bundle adjustment, triangulation and refinement of the placed model. */
  globalRefine(formulation: PositioningFormulation): void {
    this.engine.call("edgesfm_mapping_global_refine", this.handle, formulation === "eliminated_scale" ? 1 : 0);
  }

  /**
   * Continues from `model` (in this mapping's input indices, as models() gives one) instead of
   * an initial pair; before the first step. The steps then grow it as any model: the input's
   * images it does not hold are registered into it where they can be, with triangulation and
   * local and global bundle adjustment, and the last global refinement finishes it (models
   * mapped apart and joined: an image no part registered is tried against the whole model).
   * Answers the number of track elements left out (an image the model does not register, a
   * keypoint in two tracks, two keypoints of one image in a track).
   */
  extend(model: Pick<MappedModel, "cameras" | "images" | "points" | "tracks">): number {
    if (model.cameras.length !== this.input.cameras.length) throw new Error("extend: one camera per input camera");
    return this.engine.withHeap((heap) =>
      this.engine.call(
        "edgesfm_mapping_extend",
        this.handle,
        heap.f64(model.cameras.flatMap((c) => c.params)),
        model.images.length,
        heap.i32(model.images.map((im) => im.image)),
        heap.f64(model.images.flatMap((im) => [...im.qvec, ...im.tvec])),
        model.points.length / 3,
        heap.f64(model.points),
        model.tracks.length,
        heap.i32(model.tracks),
      ),
    );
  }

  /** Up to `maxSteps` steps (start a model, register one image, finish a model). */
  step(maxSteps = 1): MappingStatus {
    const status = this.engine.call("edgesfm_mapping_step", this.handle, maxSteps);
    return status === 0 ? "done" : status === 2 ? "snapshot" : "running";
  }

  /** Steps to the end, calling `onSnapshot` whenever a snapshot is due. */
  run(onSnapshot?: (mapping: IncrementalMapping) => void): MappedModel[] {
    for (;;) {
      const status = this.step(1 << 30);
      if (status === "snapshot") onSnapshot?.(this);
      if (status === "done") break;
    }
    return this.models();
  }

  get numRegistrations(): number {
    return this.engine.call("edgesfm_mapping_num_registrations", this.handle);
  }

  progress(): MappingProgress {
    const [phase, imagesHeld, imagesReachable] = this.engine.withHeap((heap) => {
      const ptr = heap.alloc(12);
      this.engine.call("edgesfm_mapping_progress", this.handle, ptr);
      return Array.from(this.engine.readI32(ptr, 3));
    }) as [number, number, number];
    return { phase: MAPPING_PHASES[phase] ?? "done", imagesHeld, imagesReachable };
  }

  /** Ends the run early (time budget): the next steps finish the model being built and start no other. */
  requestFinish(): void {
    this.engine.call("edgesfm_mapping_request_finish", this.handle);
  }

  /** Finished models, then the one in progress. */
  models(): MappedModel[] {
    const { engine } = this;
    const r = engine.call("edgesfm_mapping_result", this.handle);
    try {
      const models: MappedModel[] = [];
      const n = engine.call("edgesfm_mapping_result_num_models", r);
      for (let m = 0; m < n; m += 1) {
        const counts = engine.withHeap((heap) => {
          const ptr = heap.alloc(16);
          engine.call("edgesfm_mapping_result_counts", r, m, ptr);
          return engine.readI32(ptr, 4);
        });
        const [numImages, numPoints, trackLength, numParams] = Array.from(counts) as [number, number, number, number];
        const params = engine.readF64(engine.call("edgesfm_mapping_result_camera_params", r, m), numParams);
        const indices = engine.readI32(engine.call("edgesfm_mapping_result_image_indices", r, m), numImages);
        const poses = engine.readF64(engine.call("edgesfm_mapping_result_poses", r, m), 7 * numImages);
        let offset = 0;
        const cameras = this.input.cameras.map((c) => {
          const p = Array.from(params.subarray(offset, offset + c.params.length));
          offset += c.params.length;
          return { ...c, params: p };
        });
        models.push({
          cameras,
          images: Array.from(indices, (image, i) => ({
            image,
            qvec: Array.from(poses.subarray(7 * i, 7 * i + 4)) as MappedImage["qvec"],
            tvec: Array.from(poses.subarray(7 * i + 4, 7 * i + 7)) as MappedImage["tvec"],
          })),
          points: engine.readF64(engine.call("edgesfm_mapping_result_points", r, m), 3 * numPoints),
          tracks: engine.readI32(engine.call("edgesfm_mapping_result_tracks", r, m), trackLength),
          meanReprojectionError: engine.call("edgesfm_mapping_result_mean_reprojection_error", r, m),
        });
      }
      return models;
    } finally {
      engine.call("edgesfm_mapping_result_free", r);
    }
  }

  /** The run's state as bytes (resume with restore() on a mapping made from the same input). */
  checkpoint(): Uint8Array {
    const b = this.engine.call("edgesfm_mapping_checkpoint", this.handle);
    try {
      const ptr = heapAddress(this.engine.call("edgesfm_mapping_bytes_data", b));
      const size = this.engine.call("edgesfm_mapping_bytes_size", b);
      return this.engine.module.HEAPU8.slice(ptr, ptr + size);
    } finally {
      this.engine.call("edgesfm_mapping_bytes_free", b);
    }
  }

  restore(bytes: Uint8Array): void {
    const status = this.engine.withHeap((heap) => {
      const ptr = heap.alloc(bytes.length);
      this.engine.module.HEAPU8.set(bytes, ptr);
      return this.engine.call("edgesfm_mapping_restore", this.handle, ptr, bytes.length);
    });
    if (status !== 0) throw new Error("IncrementalMapping.restore: not a checkpoint of this input");
  }

  free(): void {
    if (this.handle !== 0) this.engine.call("edgesfm_mapping_free", this.handle);
    this.handle = 0;
  }
}

/**
 * `model` grown by the incremental mapper over `input` (IncrementalMapping.extend, then steps to the
 * end; one model): the input's images with verified pairs it does not hold registered into it where
 * they can be, and the last global refinement. Answers the grown model, or undefined if it was
 * lost. `beforeStep` runs before each step (progress, cancellation).
 */
export async function extendModel(
  engine: Engine,
  input: MappingInput,
  options: IncrementalMappingOptions,
  model: Pick<MappedModel, "cameras" | "images" | "points" | "tracks">,
  beforeStep?: (mapping: IncrementalMapping) => Promise<void> | void,
): Promise<MappedModel | undefined> {
  const mapping = new IncrementalMapping(engine, input, { ...options, multiple_models: false });
  try {
    mapping.extend(model);
    for (;;) {
      await beforeStep?.(mapping);
      if (mapping.step(1) === "done") break;
    }
    return mapping.models()[0];
  } finally {
    mapping.free();
  }
}

/**
 * The 3D point id (index into `model.points`) of every keypoint of input image `image`,
 * -1 for keypoints in no track (spec 2.14 images.json points2D[].point3d_id).
 */
export function point3DIdsOfImage(model: MappedModel, image: number, numKeypoints: number): Int32Array {
  const ids = new Int32Array(numKeypoints).fill(-1);
  let k = 0;
  for (let p = 0; k < model.tracks.length; p += 1) {
    const length = model.tracks[k]!;
    for (let e = 0; e < length; e += 1) {
      if (model.tracks[k + 1 + 2 * e] === image) ids[model.tracks[k + 2 + 2 * e]!] = p;
    }
    k += 1 + 2 * length;
  }
  return ids;
}
