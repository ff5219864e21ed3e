/**
 * @module `export.instant_ngp`: transforms.json as instant-ngp's scripts/colmap2nerf.py writes it
 * from a COLMAP text model, read by instant-ngp's NeRF loader:
 *
 * The fields follow the current script (older copies: one camera, no k3/k4/is_fisheye, aabb_scale 16).
 * - camera: camera_angle_x/y (= 2 atan(w / 2 fl_x), 2 atan(h / 2 fl_y)), fl_x, fl_y, k1, k2, k3,
 *   k4, p1, p2, is_fisheye, cx, cy, w, h; top level for a single camera, else on every frame;
 *   aabb_scale at the top level (colmap2nerf's default 32);
 * - frames: file_path "./images/<name>", transform_matrix = camera-to-world with OpenGL axes,
 *   reoriented as colmap2nerf does without --keep_colmap_coords: world rows [1, 0, 2] with the new
 *   z negated, then rotated so the mean camera up is +z, translated so the point the cameras look
 *   at (closest_point_2_lines, weighted) is the origin, scaled so the mean camera distance is 4.
 * - `applied_transform` (3x4, ours; instant-ngp ignores unknown keys): that world change
 *   x' = s (R x - c) as one similarity, so points and poses can be mapped back to the snapshot.
 *   colmap2nerf's per-frame `sharpness` (a Laplacian variance of the decoded photo) is omitted:
 *   the loader does not require it.
 */
import { cross, dot, identity4, multiply4, normalize, type Matrix4, type Vec3 } from "./geometry";
import { ExportError, type ExportModel, type SnapshotCamera } from "./export-model";
import { openCvIntrinsics, openGlCamToWorld } from "./opengl-frames";

export const INSTANT_NGP_DEFAULT_AABB_SCALE = 32;

function cameraFields(camera: SnapshotCamera): Record<string, number | boolean> {
  const k = openCvIntrinsics(camera);
  if (!k)
    throw new ExportError("unsupported_camera_model", `instant-ngp has no camera model for ${camera.model} (camera ${camera.camera_id})`);
  return {
    camera_angle_x: 2 * Math.atan(k.w / (2 * k.fl_x)),
    camera_angle_y: 2 * Math.atan(k.h / (2 * k.fl_y)),
    fl_x: k.fl_x,
    fl_y: k.fl_y,
    k1: k.k1,
    k2: k.k2,
    k3: k.k3,
    k4: k.k4,
    p1: k.p1,
    p2: k.p2,
    is_fisheye: k.fisheye,
    cx: k.cx,
    cy: k.cy,
    w: k.w,
    h: k.h,
  };
}

/** colmap2nerf's rotmat: the rotation taking direction a onto b (Rodrigues), as a 4x4. */
function rotationBetween(a: Vec3, b: Vec3): Matrix4 {
  const [na, nb] = [normalize(a), normalize(b)];
  const v = cross(na, nb);
  const c = dot(na, nb);
  // Opposite directions: colmap2nerf jitters a randomly; a half turn about x is the deterministic choice.
  if (c < -1 + 1e-10)
    return [
      [1, 0, 0, 0],
      [0, -1, 0, 0],
      [0, 0, -1, 0],
      [0, 0, 0, 1],
    ];
  const k: Matrix4 = [
    [0, -v[2], v[1], 0],
    [v[2], 0, -v[0], 0],
    [-v[1], v[0], 0, 0],
    [0, 0, 0, 0],
  ];
  const kk = multiply4(k, k);
  const f = (1 - c) / (dot(v, v) + 1e-10);
  return identity4().map((row, i) => row.map((e, j) => e + k[i]![j]! + kk[i]![j]! * f)) as Matrix4;
}

/** colmap2nerf's closest_point_2_lines: midpoint of the closest points of two rays, and its weight. */
function closestPointOfTwoLines(oa: Vec3, da: Vec3, ob: Vec3, db: Vec3): { point: Vec3; weight: number } {
  const [a, b] = [normalize(da), normalize(db)];
  const c = cross(a, b);
  const denom = dot(c, c);
  const t: Vec3 = [ob[0] - oa[0], ob[1] - oa[1], ob[2] - oa[2]];
  // det([t, d, c]) of rows t, d, c = t . (d x c)
  let ta = dot(t, cross(b, c)) / (denom + 1e-10);
  let tb = dot(t, cross(a, c)) / (denom + 1e-10);
  if (ta > 0) ta = 0;
  if (tb > 0) tb = 0;
  const point: Vec3 = [0, 1, 2].map((i) => (oa[i]! + ta * a[i]! + ob[i]! + tb * b[i]!) * 0.5) as Vec3;
  return { point, weight: denom };
}

/** colmap2nerf's world change without --keep_colmap_coords: rows [1, 0, 2], new z negated. */
const AXIS_SWAP: Matrix4 = [
  [0, 1, 0, 0],
  [1, 0, 0, 0],
  [0, 0, -1, 0],
  [0, 0, 0, 1],
];

export function instantNgpTransforms(model: ExportModel, aabbScale = INSTANT_NGP_DEFAULT_AABB_SCALE): Record<string, unknown> {
  for (const c of model.cameras) cameraFields(c);
  // 1. OpenGL camera-to-world, world axes swapped; sum the camera up vectors (column 1).
  const poses = model.images.map((image) => multiply4(AXIS_SWAP, openGlCamToWorld(image)));
  const up: Vec3 = [0, 0, 0];
  for (const m of poses) for (let i = 0; i < 3; i++) up[i] = up[i]! + m[i]![1]!;
  // 2. Rotate the mean up onto +z.
  const rotation = poses.length > 0 && Math.hypot(...up) > 0 ? rotationBetween(up, [0, 0, 1]) : identity4();
  const rotated = poses.map((m) => multiply4(rotation, m));
  // 3. Centre of attention: weighted closest points of every pair of viewing rays (column 2 = -view direction).
  let totalWeight = 0;
  const centre: Vec3 = [0, 0, 0];
  const column = (m: Matrix4, j: number): Vec3 => [m[0]![j]!, m[1]![j]!, m[2]![j]!];
  for (const f of rotated) {
    for (const g of rotated) {
      const { point, weight } = closestPointOfTwoLines(column(f, 3), column(f, 2), column(g, 3), column(g, 2));
      if (weight > 0.00001) {
        for (let i = 0; i < 3; i++) centre[i] = centre[i]! + point[i]! * weight;
        totalWeight += weight;
      }
    }
  }
  if (totalWeight > 0) for (let i = 0; i < 3; i++) centre[i] = centre[i]! / totalWeight;
  // 4. Mean camera distance to the centre becomes 4.
  let meanDistance = 0;
  for (const m of rotated) meanDistance += Math.hypot(m[0]![3]! - centre[0], m[1]![3]! - centre[1], m[2]![3]! - centre[2]);
  meanDistance /= Math.max(1, rotated.length);
  const scale = meanDistance > 0 ? 4 / meanDistance : 1;

  const single = model.cameras.length === 1;
  const out: Record<string, unknown> = single ? { ...cameraFields(model.cameras[0]!) } : {};
  out.aabb_scale = aabbScale;
  out.frames = model.images.map((image, k) => {
    const m = rotated[k]!;
    const transform = [0, 1, 2].map((i) => [m[i]![0]!, m[i]![1]!, m[i]![2]!, (m[i]![3]! - centre[i]!) * scale]);
    transform.push([0, 0, 0, 1]);
    return {
      file_path: `./images/${image.name}`,
      transform_matrix: transform,
      ...(single ? {} : cameraFields(model.cameraById.get(image.camera_id)!)),
    };
  });
  // x' = s (R A x - c)
  const world = multiply4(rotation, AXIS_SWAP);
  out.applied_transform = world.slice(0, 3).map((row, i) => [...row.slice(0, 3).map((v) => v * scale), -centre[i]! * scale]);
  return out;
}

export function exportInstantNgp(model: ExportModel, options: { aabbScale?: number }): Map<string, Uint8Array> {
  const files = new Map<string, Uint8Array>();
  files.set("transforms.json", new TextEncoder().encode(JSON.stringify(instantNgpTransforms(model, options.aabbScale), null, 1)));
  return files;
}
