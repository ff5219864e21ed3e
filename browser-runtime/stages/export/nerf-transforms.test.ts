/**
 * `export.nerfstudio` and `export.instant_ngp`: the documented transforms.json fields are present,
 * and the files are consistent with the snapshot: 3D points projected through each exported camera
 * with the format's own conventions (OpenGL camera-to-world, x right / y up / z back; OpenCV
 * k1 k2 p1 p2 distortion on normalised coordinates; pixel = fl * x + c with y down) land where the
 * snapshot's camera puts them and on the observed keypoint within a pixel.
 * The projection here is written from those conventions, independently of the exporters.
 */
import { describe, expect, it } from "vitest";
import { decodePoints } from "../../../protocol/wire/points";
import { projectToImage } from "../../../protocol/camera-projection";
import { worldToCamera, type Vec3 } from "./geometry";
import { buildExportModel, ExportError, exportSnapshot } from "./index";
import type { SnapshotFiles } from "./from-colmap";
import { EXPORT_TEST_SETS, referenceExport, referenceSnapshot } from "./testing/colmap-cli";

type Json = Record<string, any>;

const NERFSTUDIO_INTRINSICS = ["fl_x", "fl_y", "cx", "cy", "w", "h", "camera_model", "k1", "k2", "p1", "p2"];
const INSTANT_NGP_INTRINSICS = [
  "camera_angle_x",
  "camera_angle_y",
  "fl_x",
  "fl_y",
  "k1",
  "k2",
  "k3",
  "k4",
  "p1",
  "p2",
  "is_fisheye",
  "cx",
  "cy",
  "w",
  "h",
];

/** Inverse of a rigid 4x4 given as rows, applied to a point: R^T (p - t). */
function cameraFromWorld(c2w: number[][], p: Vec3): Vec3 {
  const d = [p[0] - c2w[0]![3]!, p[1] - c2w[1]![3]!, p[2] - c2w[2]![3]!];
  return [0, 1, 2].map((j) => c2w[0]![j]! * d[0]! + c2w[1]![j]! * d[1]! + c2w[2]![j]! * d[2]!) as Vec3;
}

/**
 * Pixel of a point in OpenGL camera coordinates through OpenCV intrinsics and distortion
 * (OpenCV's fisheye model on the angle when the format says fisheye).
 */
function projectOpenGl(k: Json, p: Vec3): [number, number] {
  const x = p[0] / -p[2];
  const y = -p[1] / -p[2];
  const r2 = x * x + y * y;
  if (k.camera_model === "OPENCV_FISHEYE" || k.is_fisheye === true) {
    const r = Math.sqrt(r2);
    const theta = Math.atan(r);
    const t2 = theta * theta;
    const thetaD = theta * (1 + k.k1 * t2 + k.k2 * t2 ** 2 + k.k3 * t2 ** 3 + k.k4 * t2 ** 4);
    return [k.fl_x * ((x * thetaD) / r) + k.cx, k.fl_y * ((y * thetaD) / r) + k.cy];
  }
  const radial = 1 + k.k1 * r2 + k.k2 * r2 * r2;
  const xd = x * radial + 2 * k.p1 * x * y + k.p2 * (r2 + 2 * x * x);
  const yd = y * radial + 2 * k.p2 * x * y + k.p1 * (r2 + 2 * y * y);
  return [k.fl_x * xd + k.cx, k.fl_y * yd + k.cy];
}

function applyAffine(m: number[][], p: Vec3): Vec3 {
  return [0, 1, 2].map((i) => m[i]![0]! * p[0] + m[i]![1]! * p[1] + m[i]![2]! * p[2] + m[i]![3]!) as Vec3;
}

/**
 * For every frame: 8 observations whose snapshot reprojection is within a pixel; the exported
 * camera must put the point where the snapshot's does (1e-6 px) and so on the keypoint (< 1 px).
 * With `onKeypoint` false (cameras swapped for another model, so keypoints no longer fit) only
 * the agreement with the snapshot's projection is checked, on the first 8 observations.
 */
function checkProjections(
  snapshot: SnapshotFiles,
  transforms: Json,
  pathPrefix: string,
  intrinsicKeys: string[],
  onKeypoint = true,
): number {
  const cloud = decodePoints(snapshot.points);
  const xyzById = new Map<number, Vec3>();
  cloud.ids.forEach((id, i) => xyzById.set(Number(id), [cloud.xyz[3 * i]!, cloud.xyz[3 * i + 1]!, cloud.xyz[3 * i + 2]!]));
  const imagesByPath = new Map(snapshot.images.images.map((i) => [`${pathPrefix}${i.name}`, i]));
  const camerasById = new Map(snapshot.cameras.cameras.map((c) => [c.camera_id, c]));
  let checked = 0;
  expect(transforms.frames).toHaveLength(snapshot.images.images.length);
  for (const frame of transforms.frames as Json[]) {
    const intrinsics: Json = { ...transforms, ...frame };
    for (const key of intrinsicKeys) expect(intrinsics, key).toHaveProperty(key);
    expect(frame.transform_matrix).toHaveLength(4);
    const image = imagesByPath.get(frame.file_path);
    expect(image, frame.file_path).toBeDefined();
    const camera = camerasById.get(image!.camera_id)!;
    let perFrame = 0;
    for (const p of image!.points2D) {
      if (p.point3d_id === null || perFrame >= 8) continue;
      const xyz = xyzById.get(p.point3d_id)!;
      const snapshotPixel = projectToImage(camera, worldToCamera(image!.cam_from_world, xyz))!;
      if (onKeypoint && Math.hypot(snapshotPixel[0] - p.xy[0], snapshotPixel[1] - p.xy[1]) >= 1) continue;
      const exported = projectOpenGl(intrinsics, cameraFromWorld(frame.transform_matrix, applyAffine(transforms.applied_transform, xyz)));
      expect(Math.hypot(exported[0] - snapshotPixel[0], exported[1] - snapshotPixel[1])).toBeLessThan(1e-6);
      if (onKeypoint) expect(Math.hypot(exported[0] - p.xy[0], exported[1] - p.xy[1])).toBeLessThan(1);
      perFrame += 1;
    }
    expect(perFrame).toBe(8);
    checked += perFrame;
  }
  return checked;
}

describe.each(EXPORT_TEST_SETS)("NeRF transforms.json exports of %s", (set) => {
  it("nerfstudio: documented fields, colmap_to_json's applied_transform, projections onto the keypoints", async () => {
    const snapshot = await referenceSnapshot(set);
    const result = await referenceExport(set, "nerfstudio");
    const transforms = JSON.parse(new TextDecoder().decode(result.files.get("transforms.json"))) as Json;
    expect(transforms.applied_transform).toEqual([
      [1, 0, 0, 0],
      [0, 0, 1, 0],
      [0, -1, 0, 0],
    ]);
    expect(transforms.ply_file_path).toBe("sparse_pc.ply");
    expect(result.files.has("sparse_pc.ply")).toBe(true);
    // One camera: intrinsics at the top level (nerfstudio's single-camera mode); several: per frame.
    const single = snapshot.cameras.cameras.length === 1;
    expect("fl_x" in transforms).toBe(single);
    for (const frame of transforms.frames as Json[]) {
      expect(frame.file_path.startsWith("images/")).toBe(true);
      expect(typeof frame.colmap_im_id).toBe("number");
    }
    expect(checkProjections(snapshot, transforms, "images/", NERFSTUDIO_INTRINSICS)).toBeGreaterThan(0);
    expect(result.warnings.join()).toMatch(/photos not included/);
  });

  it("instant-ngp: documented fields, a recentred and rescaled world, projections onto the keypoints", async () => {
    const snapshot = await referenceSnapshot(set);
    const transforms = JSON.parse(
      new TextDecoder().decode((await referenceExport(set, "instant_ngp")).files.get("transforms.json")),
    ) as Json;
    expect(transforms.aabb_scale).toBe(32);
    for (const frame of transforms.frames as Json[]) {
      const k = { ...transforms, ...frame };
      expect(k.camera_angle_x).toBeCloseTo(2 * Math.atan(k.w / (2 * k.fl_x)), 12);
      expect(k.is_fisheye).toBe(false);
    }
    // colmap2nerf: mean camera distance from the centre of attention is 4, mean camera up is +z.
    const centres = (transforms.frames as Json[]).map(
      (f) => [f.transform_matrix[0][3], f.transform_matrix[1][3], f.transform_matrix[2][3]] as Vec3,
    );
    const meanDistance = centres.reduce((s, c) => s + Math.hypot(...c), 0) / centres.length;
    expect(meanDistance).toBeCloseTo(4, 9);
    const up = [0, 1, 2].map((i) => (transforms.frames as Json[]).reduce((s, f) => s + f.transform_matrix[i][1], 0));
    // colmap2nerf's rotmat divides by |v|^2 + 1e-10, so the alignment is exact only to ~1e-9.
    expect(Math.hypot(up[0]!, up[1]!) / Math.hypot(...up)).toBeLessThan(1e-8);
    expect(up[2]!).toBeGreaterThan(0);
    expect(checkProjections(snapshot, transforms, "./images/", INSTANT_NGP_INTRINSICS)).toBeGreaterThan(0);
  });

  it("the nerfstudio point cloud is the snapshot's points in the exported world", async () => {
    const snapshot = await referenceSnapshot(set);
    const ply = (await referenceExport(set, "nerfstudio")).files.get("sparse_pc.ply")!;
    const model = buildExportModel(snapshot);
    const header = new TextDecoder().decode(ply.subarray(0, 300));
    const body = header.indexOf("end_header\n") + "end_header\n".length;
    expect(header).toContain(`element vertex ${model.points.length}\n`);
    const view = new DataView(ply.buffer, ply.byteOffset + body);
    for (const i of [0, model.points.length >> 1, model.points.length - 1]) {
      const [x, y, z] = model.points[i]!.xyz;
      // x' = x, y' = z, z' = -y
      expect([view.getFloat32(15 * i, true), view.getFloat32(15 * i + 4, true), view.getFloat32(15 * i + 8, true)]).toEqual([x, z, -y]);
    }
  });
});

describe("NeRF exports of the other camera models nerfstudio and instant-ngp map", () => {
  // Each camera swapped for the model, parameters around the reference's; the exported camera
  // must still project exactly as the snapshot's (k1 k2 p1 p2 order, fisheye k1..k4).
  const variants: Array<[string, (f: number, cx: number, cy: number) => number[]]> = [
    ["OPENCV", (f, cx, cy) => [f, 0.98 * f, cx, cy, 0.05, -0.01, 0.002, -0.003]],
    ["RADIAL", (f, cx, cy) => [f, cx, cy, 0.05, -0.01]],
    ["OPENCV_FISHEYE", (f, cx, cy) => [f, 1.01 * f, cx, cy, 0.05, -0.01, 0.002, 0.001]],
    ["SIMPLE_RADIAL_FISHEYE", (f, cx, cy) => [f, cx, cy, 0.05]],
    ["RADIAL_FISHEYE", (f, cx, cy) => [f, cx, cy, 0.05, -0.01]],
  ];
  it.each(variants)("%s", async (model, params) => {
    const reference = await referenceSnapshot("sacre-coeur");
    const snapshot = {
      ...reference,
      cameras: {
        cameras: reference.cameras.cameras.map((c) => ({ ...c, model, params: params(c.params[0]!, c.params[1]!, c.params[2]!) })),
      },
    };
    const fisheye = model.includes("FISHEYE");
    const nerfstudio = JSON.parse(new TextDecoder().decode(exportSnapshot("nerfstudio", snapshot).files.get("transforms.json"))) as Json;
    expect(nerfstudio.frames[0].camera_model).toBe(fisheye ? "OPENCV_FISHEYE" : "OPENCV");
    checkProjections(
      snapshot,
      nerfstudio,
      "images/",
      fisheye ? ["fl_x", "fl_y", "cx", "cy", "w", "h", "k1", "k2", "k3", "k4"] : NERFSTUDIO_INTRINSICS,
      false,
    );
    const ngp = JSON.parse(new TextDecoder().decode(exportSnapshot("instant_ngp", snapshot).files.get("transforms.json"))) as Json;
    expect(ngp.frames[0].is_fisheye).toBe(fisheye);
    checkProjections(snapshot, ngp, "./images/", INSTANT_NGP_INTRINSICS, false);
  });
});

describe("NeRF exports refuse cameras their trainers cannot model", () => {
  it("FULL_OPENCV has no nerfstudio or instant-ngp camera model", async () => {
    const snapshot = await referenceSnapshot("sceaux-castle");
    const c = snapshot.cameras.cameras[0]!;
    const cameras = {
      cameras: [{ ...c, model: "FULL_OPENCV", params: [c.params[0]!, c.params[0]!, c.params[1]!, c.params[2]!, 0, 0, 0, 0, 0, 0, 0, 0] }],
    };
    for (const format of ["nerfstudio", "instant_ngp"] as const) {
      expect(() => exportSnapshot(format, { ...snapshot, cameras }), format).toThrow(ExportError);
    }
  });
});
