/**
 * @module Merging snapshot models (spec 4.9 `:merge`): source models moved into the target's frame
 * by `target_from_source` Sim3s (given, or estimated here) and joined into one model.
 *
 * Images are the same image when their photos are the same bytes (content SHA-256). Without an
 * aligner, `target_from_source` is estimated (stages/sim3.ts, Umeyama in RANSAC) from the shared
 * images' camera centres and the 3D points both models triangulated from the same keypoint of a
 * shared image. Joining: the target's cameras, images and points keep their ids; a source's other
 * images and cameras are added under new ids; a shared image keeps the target's pose and gains the
 * source's observations of keypoints the target left out of any track; a source point observed at
 * the same keypoint of a shared image as a target point is fused into it (their mean position,
 * weighted by track length); the other source points are added under new ids. Track lengths are
 * recounted from the observations, and the mean reprojection error is measured again;
 * `refineMerged` then adjusts the joined model (poses, points and intrinsics) on the engine.
 */
import type { CamerasFile, ImagesFile, Sim3 } from "../../protocol";
import type { PointCloud } from "../../protocol/wire/points";
import type { PointDescriptors } from "../../protocol/wire/point-descriptors";
import type { Vec3 } from "../../engine-wasm/ts/accuracy";
import { meanReprojectionError } from "../../protocol/camera-projection";
import { type Alignment, type AlignmentPair, AlignmentError, applySim3, centreOf, estimateAlignment, transformPose } from "./sim3";
import { type BundleAdjustmentResult, bundleAdjust } from "../../engine-wasm/ts/ba";
import { CAMERA_MODELS } from "../../protocol/camera-models";
import type { Engine } from "../../engine-wasm/ts/engine";

export interface SnapshotModel {
  cameras: CamerasFile;
  images: ImagesFile;
  points: PointCloud;
}

/** A model to merge, the content SHA-256 of each of its images by name, and its points' descriptors when its snapshot has them. */
export interface MergeInput {
  model: SnapshotModel;
  shaOf: ReadonlyMap<string, string>;
  descriptors?: PointDescriptors | null;
}

type Image = ImagesFile["images"][number];

/** The images two models share (same photo bytes) and the 3D points both triangulated from one keypoint of such an image. */
export function correspondences(target: MergeInput, source: MergeInput) {
  const targetBySha = new Map<string, Image>();
  for (const im of target.model.images.images) {
    const sha = target.shaOf.get(im.name);
    if (sha) targetBySha.set(sha, im);
  }
  const images: [Image, Image][] = [];
  const points = new Map<number, number>(); // source point -> target point (first seen)
  for (const s of source.model.images.images) {
    const sha = source.shaOf.get(s.name);
    const t = sha ? targetBySha.get(sha) : undefined;
    if (!t) continue;
    images.push([t, s]);
    s.points2D.forEach((kp, k) => {
      const tp = t.points2D[k]?.point3d_id;
      if (kp.point3d_id !== null && tp !== null && tp !== undefined && !points.has(kp.point3d_id)) points.set(kp.point3d_id, tp);
    });
  }
  return { images, points };
}

const xyzOf = (cloud: PointCloud) => {
  const at = new Map<number, Vec3>();
  cloud.ids.forEach((id, i) => at.set(Number(id), [cloud.xyz[3 * i]!, cloud.xyz[3 * i + 1]!, cloud.xyz[3 * i + 2]!]));
  return at;
};

/**
 * `target_from_source` from what the models share: camera centres of shared images and points of
 * shared keypoints, in RANSAC with an inlier threshold of `relativeThreshold` times the spread of
 * the target's positions. Throws an AlignmentError when they share too little.
 */
export function estimateTargetFromSource(
  target: MergeInput,
  source: MergeInput,
  relativeThreshold = 0.02,
): Alignment & { shared_images: number; shared_points: number } {
  const { images, points } = correspondences(target, source);
  const pairs: AlignmentPair[] = images.map(([t, s]) => ({
    name: t.name,
    centre: centreOf(s.cam_from_world),
    reference: centreOf(t.cam_from_world),
  }));
  const [tx, sx] = [xyzOf(target.model.points), xyzOf(source.model.points)];
  for (const [s, t] of points) {
    const [ps, pt] = [sx.get(s), tx.get(t)];
    if (ps && pt) pairs.push({ name: `point ${t}`, centre: ps, reference: pt });
  }
  if (images.length === 0) throw new AlignmentError("the source shares no image (same photo bytes) with the target: give its sim3_aligner");
  const mean = [0, 1, 2].map((k) => pairs.reduce((a, p) => a + p.reference[k]!, 0) / pairs.length);
  const spread = Math.sqrt(
    pairs.reduce((a, p) => a + (p.reference[0] - mean[0]!) ** 2 + (p.reference[1] - mean[1]!) ** 2 + (p.reference[2] - mean[2]!) ** 2, 0) /
      pairs.length,
  );
  return {
    ...estimateAlignment(pairs, Math.max(relativeThreshold * spread, 1e-12)),
    shared_images: images.length,
    shared_points: points.size,
  };
}

const concatenated = (rows: Uint8Array[], dim: number) => {
  const out = new Uint8Array(rows.length * dim);
  rows.forEach((r, i) => out.set(r, i * dim));
  return out;
};

export interface MergedModel extends SnapshotModel {
  /** The merged points' descriptors (`x-point_descriptors.bin`) when every model merged had them, of one kind; else null. */
  descriptors: PointDescriptors | null;
  mean_reproj_err: number;
  fused_points: number;
  added_images: number;
}

/**
 * The target with every source joined, each moved by its `target_from_source`. With `keepIds` (models of one
 * dataset, whose ids mean the same everywhere) a source's image keeps its id where the target has none of that id,
 * and a source's camera is the target's camera of the same id (else it is added under its own id); otherwise
 * images and cameras take new ids.
 */
export function mergeModels(target: MergeInput, sources: { input: MergeInput; sim3: Sim3 }[], keepIds = false): MergedModel {
  const cameras = target.model.cameras.cameras.map((c) => ({ ...c }));
  const images: Image[] = target.model.images.images.map((im) => ({ ...im, points2D: im.points2D.map((p) => ({ ...p })) }));
  const byName = new Map(images.map((im) => [im.name, im]));
  const targetBySha = new Map<string, Image>();
  for (const im of images) {
    const sha = target.shaOf.get(im.name);
    if (sha) targetBySha.set(sha, im);
  }
  // Positions (float64) and colours by point id; fused points are union-find sets of ids.
  const xyz = xyzOf(target.model.points);
  const rgb = new Map<number, [number, number, number]>();
  const weight = new Map<number, number>();
  target.model.points.ids.forEach((id, i) => {
    rgb.set(Number(id), [target.model.points.rgb[3 * i]!, target.model.points.rgb[3 * i + 1]!, target.model.points.rgb[3 * i + 2]!]);
    weight.set(Number(id), target.model.points.trackLength[i]!);
  });
  const parent = new Map<number, number>();
  const find = (id: number): number => {
    let r = id;
    while (parent.has(r)) r = parent.get(r)!;
    return r;
  };
  let nextPoint = Math.max(0, ...xyz.keys()) + 1;
  // Descriptors by point id, kept only when every model has them (of one kind and size).
  const inputs = [target, ...sources.map((src) => src.input)];
  const first = target.descriptors;
  const describe =
    first &&
    inputs.every((m) => m.descriptors?.descriptorKind === first.descriptorKind && m.descriptors.descriptorDim === first.descriptorDim);
  const dim = first?.descriptorDim ?? 0;
  const descriptorOf = new Map<number, Uint8Array>();
  const keepDescriptors = (d: PointDescriptors | null | undefined, idOf: (id: number) => number | undefined) => {
    if (!describe) return;
    d!.ids.forEach((id, i) => {
      const nid = idOf(id);
      if (nid !== undefined) descriptorOf.set(nid, d!.descriptors.subarray(dim * i, dim * i + dim));
    });
  };
  keepDescriptors(target.descriptors, (id) => (xyz.has(id) ? id : undefined));
  const takenImages = new Set(images.map((im) => im.image_id));
  const takenCameras = new Set(cameras.map((c) => c.camera_id));
  // New ids above every id in use (with keepIds, the sources' too: a kept id must not be taken already).
  const inUse = (ids: Set<number>, of: (m: MergeInput) => number[]) =>
    keepIds ? [...ids, ...sources.flatMap((src) => of(src.input))] : [...ids];
  let nextImage = Math.max(0, ...inUse(takenImages, (m) => m.model.images.images.map((im) => im.image_id))) + 1;
  let nextCamera = Math.max(0, ...inUse(takenCameras, (m) => m.model.cameras.cameras.map((c) => c.camera_id))) + 1;
  const newImageId = (id: number) => (keepIds && !takenImages.has(id) ? id : nextImage++);
  const newCameraId = (id: number) => (keepIds && !takenCameras.has(id) ? id : nextCamera++);
  let fused = 0;
  let added = 0;

  for (const { input, sim3 } of sources) {
    const pointId = new Map<number, number>();
    input.model.points.ids.forEach((id, i) => {
      const nid = nextPoint++;
      pointId.set(Number(id), nid);
      xyz.set(
        nid,
        applySim3(sim3, [input.model.points.xyz[3 * i]!, input.model.points.xyz[3 * i + 1]!, input.model.points.xyz[3 * i + 2]!]),
      );
      rgb.set(nid, [input.model.points.rgb[3 * i]!, input.model.points.rgb[3 * i + 1]!, input.model.points.rgb[3 * i + 2]!]);
      weight.set(nid, input.model.points.trackLength[i]!);
    });
    keepDescriptors(input.descriptors, (id) => pointId.get(id));
    // The cameras of the images it adds (a shared image keeps the target's camera).
    const addedCameras = new Set(
      input.model.images.images.filter((im) => !targetBySha.has(input.shaOf.get(im.name) ?? "")).map((im) => im.camera_id),
    );
    const cameraId = new Map<number, number>();
    for (const c of input.model.cameras.cameras) {
      if (!addedCameras.has(c.camera_id)) continue;
      // With keepIds a camera id the merged model holds already is that camera: its images join it (one camera for
      // the photos one camera took, however many models estimated it; the adjustment refines it from all of them).
      if (keepIds && takenCameras.has(c.camera_id)) {
        cameraId.set(c.camera_id, c.camera_id);
        continue;
      }
      const id = newCameraId(c.camera_id);
      cameraId.set(c.camera_id, id);
      takenCameras.add(id);
      cameras.push({ ...c, camera_id: id });
    }
    for (const s of input.model.images.images) {
      const sha = input.shaOf.get(s.name);
      const t = sha ? targetBySha.get(sha) : undefined;
      const mapped = (p: number | null) => (p === null ? null : (pointId.get(p) ?? null));
      if (!t) {
        const imageId = newImageId(s.image_id);
        takenImages.add(imageId);
        images.push({
          ...s,
          image_id: imageId,
          camera_id: cameraId.get(s.camera_id)!,
          cam_from_world: transformPose(s.cam_from_world, sim3),
          points2D: s.points2D.map((kp) => ({ xy: kp.xy, point3d_id: mapped(kp.point3d_id) })),
        });
        byName.set(s.name, images.at(-1)!);
        added++;
        continue;
      }
      // A shared image: the target's pose; the same keypoint in two tracks fuses them.
      s.points2D.forEach((kp, k) => {
        const sp = mapped(kp.point3d_id);
        const tk = t.points2D[k];
        if (sp === null || !tk) return;
        if (tk.point3d_id === null) {
          tk.point3d_id = sp;
          return;
        }
        const [a, b] = [find(tk.point3d_id), find(sp)];
        if (a === b) return;
        parent.set(b, a);
        fused++;
      });
    }
  }

  // Each fused set becomes its root: weighted mean position (and descriptor: each is the mean over its track), the root's colour.
  const members = new Map<number, number[]>();
  for (const id of xyz.keys()) {
    const r = find(id);
    if (!members.has(r)) members.set(r, []);
    members.get(r)!.push(id);
  }
  for (const [root, ids] of members) {
    if (ids.length === 1) continue;
    const total = ids.reduce((a, id) => a + Math.max(1, weight.get(id)!), 0);
    const mean: Vec3 = [0, 0, 0];
    for (const id of ids) for (let k = 0; k < 3; k++) mean[k]! += (xyz.get(id)![k]! * Math.max(1, weight.get(id)!)) / total;
    for (const id of ids) if (id !== root) xyz.delete(id);
    xyz.set(root, mean);
    const described = ids.filter((id) => descriptorOf.has(id));
    if (described.length === 0) continue;
    const sum = new Float64Array(dim);
    let w = 0;
    for (const id of described) {
      const d = descriptorOf.get(id)!;
      const wi = Math.max(1, weight.get(id)!);
      for (let j = 0; j < dim; j++) sum[j]! += wi * d[j]!;
      w += wi;
    }
    descriptorOf.set(
      root,
      Uint8Array.from(sum, (v) => Math.min(255, Math.round(v / w))),
    );
  }
  const count = new Map<number, number>();
  for (const im of images) {
    for (const kp of im.points2D) {
      if (kp.point3d_id === null) continue;
      kp.point3d_id = find(kp.point3d_id);
      count.set(kp.point3d_id, (count.get(kp.point3d_id) ?? 0) + 1);
    }
  }
  const ids = [...xyz.keys()].sort((a, b) => a - b);
  const points: PointCloud = {
    xyz: Float32Array.from(ids.flatMap((id) => xyz.get(id)!)),
    rgb: Uint8Array.from(ids.flatMap((id) => rgb.get(id)!)),
    trackLength: Uint16Array.from(ids.map((id) => Math.min(65535, count.get(id) ?? 0))),
    ids: BigUint64Array.from(ids.map(BigInt)),
  };
  const model = { cameras: { cameras }, images: { images } };
  const describedIds = ids.filter((id) => descriptorOf.has(id));
  const descriptors: PointDescriptors | null = describe
    ? {
        ids: describedIds,
        descriptorDim: dim,
        descriptorKind: first.descriptorKind,
        descriptors: concatenated(
          describedIds.map((id) => descriptorOf.get(id)!),
          dim,
        ),
        // Summed over the models merged: an image they share counts once per model.
        numImages: inputs.reduce((a, m) => a + m.descriptors!.numImages, 0),
        numImagesSkipped: inputs.reduce((a, m) => a + m.descriptors!.numImagesSkipped, 0),
      }
    : null;
  return {
    ...model,
    points,
    descriptors,
    mean_reproj_err: meanReprojectionError(model, (id) => xyz.get(id)) ?? 0,
    fused_points: fused,
    added_images: added,
  };
}

/** COLMAP's bounds on refined intrinsics (IncrementalMapperOptions min/max_focal_length_ratio, max_extra_param). */
const MIN_FOCAL_LENGTH_RATIO = 0.1;
const MAX_FOCAL_LENGTH_RATIO = 10;
const MAX_EXTRA_PARAM = 1;

/** COLMAP's Camera::HasBogusParams with those bounds: a focal length out of range, the principal point off the image, or a large distortion. */
export function hasBogusParams(camera: CamerasFile["cameras"][number]): boolean {
  const info = CAMERA_MODELS.find((m) => m.name === camera.model);
  if (!info) return false;
  const size = Math.max(camera.width, camera.height);
  const p = camera.params;
  if (info.focal_length_idxs.some((i) => !(p[i]! / size >= MIN_FOCAL_LENGTH_RATIO && p[i]! / size <= MAX_FOCAL_LENGTH_RATIO))) return true;
  const [cx, cy] = info.principal_point_idxs.map((i) => p[i]!);
  if (cx !== undefined && cy !== undefined && !(cx >= 0 && cx <= camera.width && cy >= 0 && cy <= camera.height)) return true;
  return info.extra_params_idxs.some((i) => !(Math.abs(p[i]!) <= MAX_EXTRA_PARAM));
}

/**
 * The merged model refined by bundle adjustment (engine-wasm/ts/ba.ts) as COLMAP's global bundle
 * adjustment after its model merger: every pose and point, and each camera's focal length and
 * distortion (principal point held), with a Cauchy loss of 1 px against the fused tracks' outliers,
 * the gauge held by the first image's pose and the second's scale. The intrinsics matter: each
 * model estimated its cameras from its own photos only, and held apart they cannot agree where the
 * models meet, so the adjustment bends the poses instead. A camera the adjustment drives out of
 * COLMAP's bounds (hasBogusParams) is held at its merged values and the adjustment run again from
 * the start, as the mapper does. Answers the refined model with its reprojection error measured again.
 */
export function refineMerged(engine: Engine, merged: MergedModel): MergedModel & { ba: MergeAdjustment } {
  const cameraIndex = new Map(merged.cameras.cameras.map((c, i) => [c.camera_id, i]));
  const pointIndex = new Map([...merged.points.ids].map((id, i) => [Number(id), i]));
  const observations: number[] = [];
  const xy: number[] = [];
  merged.images.images.forEach((im, i) => {
    for (const kp of im.points2D) {
      const p = kp.point3d_id === null ? undefined : pointIndex.get(kp.point3d_id);
      if (p === undefined) continue;
      observations.push(i, p);
      xy.push(kp.xy[0], kp.xy[1]);
    }
  });
  const held = new Set<number>();
  const adjust = () =>
    bundleAdjust(
      engine,
      {
        cameras: merged.cameras.cameras.map((c, i) => ({
          model: c.model,
          width: c.width,
          height: c.height,
          params: c.params,
          constant: held.has(i),
        })),
        images: merged.images.images.map((im) => {
          const r = im.cam_from_world.rotation;
          return { camera: cameraIndex.get(im.camera_id)!, qvec: [r.w, r.x, r.y, r.z], tvec: [...im.cam_from_world.translation] };
        }),
        points: Float64Array.from(merged.points.xyz),
        observations: Int32Array.from(observations),
        observationsXY: Float64Array.from(xy),
      },
      {
        mode: "standard",
        loss_kernel: "cauchy",
        loss_threshold: 1,
        refine_focal_length: true,
        refine_principal_point: false,
        refine_extra_params: true,
        fix_gauge: true,
        max_num_iterations: 50,
      },
    );
  const refinedCamera = (result: BundleAdjustmentResult, i: number) => ({
    ...merged.cameras.cameras[i]!,
    params: result.scene.cameras[i]!.params,
  });
  let result = adjust();
  for (;;) {
    const bogus = merged.cameras.cameras.flatMap((_, i) => (!held.has(i) && hasBogusParams(refinedCamera(result, i)) ? [i] : []));
    if (bogus.length === 0) break;
    for (const i of bogus) held.add(i);
    result = adjust();
  }
  const cameras = { cameras: merged.cameras.cameras.map((_, i) => refinedCamera(result, i)) };
  const images = merged.images.images.map((im, i) => {
    const { qvec, tvec } = result.scene.images[i]!;
    return {
      ...im,
      cam_from_world: { rotation: { w: qvec[0], x: qvec[1], y: qvec[2], z: qvec[3] }, translation: [...tvec] as [number, number, number] },
    };
  });
  const xyz = new Map(
    [...merged.points.ids].map((id, i) => [
      Number(id),
      [result.scene.points[3 * i]!, result.scene.points[3 * i + 1]!, result.scene.points[3 * i + 2]!] as Vec3,
    ]),
  );
  const model = { cameras, images: { images } };
  return {
    ...merged,
    ...model,
    points: { ...merged.points, xyz: Float32Array.from(result.scene.points) },
    mean_reproj_err: meanReprojectionError(model, (id) => xyz.get(id)) ?? 0,
    ba: {
      iterations: result.numIterations,
      initial_cost: result.initialCost,
      final_cost: result.finalCost,
      held_cameras: [...held].map((i) => merged.cameras.cameras[i]!.camera_id),
    },
  };
}

/** What the merged model's bundle adjustment did; `held_cameras`: the ids of cameras whose intrinsics it held, having driven them out of bounds. */
export interface MergeAdjustment {
  iterations: number;
  initial_cost: number;
  final_cost: number;
  held_cameras: number[];
}

/** How many of a model's shared images must align (centre within the threshold) for it to join: at least 3 and half of them. */
const MIN_ALIGNED_IMAGES = 3;

export interface JoinedSubModels {
  merged: MergedModel & { ba?: MergeAdjustment };
  /** Indices (into the input) of the models joined, the first one the target. */
  joined: number[];
}

/**
 * The models of one mapping run (issue 23) joined into one where they share photos: the first (largest) is the
 * target; every other model sharing images with it (by name: one dataset) is moved by the Sim3 its shared camera
 * centres and points give (estimateTargetFromSource) and joined when at least MIN_ALIGNED_IMAGES and half of its
 * shared images agree; a joined model can bring others in, so this repeats until nothing more joins. The result is
 * refined by bundle adjustment. Null when no model joins.
 */
export function joinSubModels(engine: Engine, models: SnapshotModel[]): JoinedSubModels | null {
  if (models.length < 2) return null;
  const byName = (m: SnapshotModel): MergeInput => ({ model: m, shaOf: new Map(m.images.images.map((im) => [im.name, im.name])) });
  let target: MergedModel | null = null;
  const joined = [0];
  for (let grew = true; grew;) {
    grew = false;
    for (const [i, model] of models.entries()) {
      if (joined.includes(i)) continue;
      const current = byName(target ?? models[0]!);
      const source = byName(model);
      let fit;
      try {
        fit = estimateTargetFromSource(current, source);
      } catch (err) {
        if (err instanceof AlignmentError) continue;
        throw err;
      }
      const aligned = fit.inliers.slice(0, fit.shared_images).filter(Boolean).length;
      if (aligned < Math.max(MIN_ALIGNED_IMAGES, fit.shared_images / 2)) continue;
      target = mergeModels(current, [{ input: source, sim3: fit.sim3 }], true);
      joined.push(i);
      grew = true;
    }
  }
  return target ? { merged: refineMerged(engine, target), joined } : null;
}

/**
 * A model of joinModelGroups: joined and refined (with its mean reprojection error), or an input model as it was;
 * `members` the input indices it holds, the first its frame.
 */
export interface ModelGroup {
  model: SnapshotModel & { mean_reproj_err?: number };
  members: number[];
}

/**
 * The models joined as far as their shared photos allow: the first (largest) with every model joinSubModels joins to
 * it, then the first of the models left with every one of them it joins, and so on. Models of places whose photos do
 * not connect give one model each place, not one joined model and the rest in pieces (a hierarchical mapping's
 * clusters of two places).
 */
export function joinModelGroups(engine: Engine, models: SnapshotModel[]): ModelGroup[] {
  const groups: ModelGroup[] = [];
  let left = models.map((_, i) => i);
  while (left.length > 0) {
    const joined = joinSubModels(
      engine,
      left.map((i) => models[i]!),
    );
    const members = (joined?.joined ?? [0]).map((k) => left[k]!);
    groups.push({ model: joined?.merged ?? models[left[0]!]!, members });
    left = left.filter((i) => !members.includes(i));
  }
  return groups;
}
