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
  const rand = () => ((s = (s * 16807) % 2147483647) / 2147483647);
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

