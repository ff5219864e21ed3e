/**
 * @module A small synthetic sparse model as snapshot files (cameras.json, images.json,
 * points.bin, summary.json contents), with exact observations: for workerd tests and for suites
 * that seal snapshots over HTTP.
 */
import { encodePoints } from "../../protocol/wire/points";

export const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

/**
 * A small synthetic scene: a PINHOLE camera, three images looking down +z from x = -0.2, 0, 0.2,
 * and `n` points in front of them (ids 10, 13, 16, ...), each observed by every image at its
 * exact projection, plus one keypoint per image in no track. `radial`: the camera is a
 * SIMPLE_RADIAL with k = 0 (the same projections, a distorted model to the formats that refuse one).
 */
export function scene(n: number, seed = 1, o: { radial?: boolean } = {}) {
  let s = seed;
  const rand = () => (s = (s * 16807) % 2147483647) / 2147483647;
  const xyz = new Float32Array(3 * n);
  for (let i = 0; i < n; i++) xyz.set([rand() * 2 - 1, rand() * 2 - 1, 4 + rand() * 2], 3 * i);
  const ids = BigUint64Array.from({ length: n }, (_, i) => BigInt(10 + 3 * i));
  const points = encodePoints({ xyz, rgb: new Uint8Array(3 * n).fill(200), trackLength: new Uint16Array(n).fill(3), ids });
  const [f, cx, cy] = [500, 320, 240];
  const camera = o.radial ? { model: "SIMPLE_RADIAL", params: [f, cx, cy, 0] } : { model: "PINHOLE", params: [f, f, cx, cy] };
  const cameras = { cameras: [{ camera_id: 1, ...camera, width: 640, height: 480, has_prior_focal_length: false }] };
  const images = {
    images: [-0.2, 0, 0.2].map((tx, k) => ({
      image_id: k + 1,
      name: `img${k}.jpg`,
      camera_id: 1,
      cam_from_world: { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [tx, 0, 0] as [number, number, number] },
      points2D: [
        { xy: [1, 1] as [number, number], point3d_id: null },
        ...Array.from({ length: n }, (_, i) => ({
          xy: [(f * (xyz[3 * i]! + tx)) / xyz[3 * i + 2]! + cx, (f * xyz[3 * i + 1]!) / xyz[3 * i + 2]! + cy] as [number, number],
          point3d_id: Number(ids[i]),
        })),
      ],
    })),
  };
  const summary = { models: [{ idx: 0, num_reg_images: 3, num_points3D: n }], phase: "incremental_register", mean_reproj_err: 0 };
  return { xyz, ids, points, cameras, images, summary };
}

type Pose = { rotation: { w: number; x: number; y: number; z: number }; translation: [number, number, number] };

/**
 * A whole model of `m` cameras (PINHOLE, slightly turned, centres on a zig-zag along x) seeing
 * `n` points, every point at its exact projection in every image (keypoint k observes point k),
 * and a way to cut it: `half(images, idBase, move)` is the model of those images alone, its point
 * ids `idBase + k`, every pose and point moved by `move` (old -> new frame: a function of poses and
 * points, so the caller's Sim3 code does the moving).
 */
export function splitScene(m: number, n: number, seed = 3) {
  let s = seed;
  const rand = () => (s = (s * 16807) % 2147483647) / 2147483647;
  const [f, cx, cy] = [500, 320, 240];
  const xyz = Array.from({ length: n }, () => [rand() * 3 - 1.5, rand() * 2 - 1, 4 + rand() * 2] as [number, number, number]);
  const poses: Pose[] = Array.from({ length: m }, (_, i) => {
    const a = 0.05 * (i - m / 2);
    const centre: [number, number, number] = [0.4 * i - 0.2 * m, 0.15 * (i % 2), 0];
    const q = { w: Math.cos(a / 2), x: 0, y: Math.sin(a / 2), z: 0 };
    // t = -R c, R about y by a.
    const [c0, c2] = [Math.cos(a), Math.sin(a)];
    const rc: [number, number, number] = [c0 * centre[0] + c2 * centre[2], centre[1], -c2 * centre[0] + c0 * centre[2]];
    return { rotation: q, translation: [-rc[0], -rc[1], -rc[2]] };
  });
  const project = (p: Pose, x: [number, number, number]): [number, number] => {
    const a = 2 * Math.atan2(p.rotation.y, p.rotation.w);
    const [c0, c2] = [Math.cos(a), Math.sin(a)];
    const y = [c0 * x[0] + c2 * x[2] + p.translation[0], x[1] + p.translation[1], -c2 * x[0] + c0 * x[2] + p.translation[2]];
    return [(f * y[0]!) / y[2]! + cx, (f * y[1]!) / y[2]! + cy];
  };
  const cameras = {
    cameras: [{ camera_id: 1, model: "PINHOLE", params: [f, f, cx, cy], width: 640, height: 480, has_prior_focal_length: false }],
  };
  const half = (
    images: number[],
    idBase: number,
    move: { pose: (p: Pose) => Pose; point: (x: [number, number, number]) => [number, number, number] },
  ) => {
    const moved = xyz.map(move.point);
    const ids = BigUint64Array.from({ length: n }, (_, k) => BigInt(idBase + k));
    const points = encodePoints({
      xyz: Float32Array.from(moved.flat()),
      rgb: new Uint8Array(3 * n).fill(128),
      trackLength: new Uint16Array(n).fill(images.length),
      ids,
    });
    const imagesFile = {
      images: images.map((i, j) => ({
        image_id: j + 1,
        name: `img${i}.jpg`,
        camera_id: 1,
        cam_from_world: move.pose(poses[i]!),
        points2D: xyz.map((x, k) => ({ xy: project(poses[i]!, x), point3d_id: idBase + k })),
      })),
    };
    const summary = {
      models: [{ idx: 0, num_reg_images: images.length, num_points3D: n }],
      phase: "incremental_register",
      mean_reproj_err: 0,
    };
    return { cameras, images: imagesFile, points, summary, xyz: Float32Array.from(moved.flat()), ids };
  };
  return { poses, xyz, cameras, half };
}
