// Panoramas as cubemap rigs: every keypoint lands on its face where the face camera (the rig's
// pose composed with the face's fixed sensor_from_rig) projects its 3D point.
import { describe, expect, it } from "vitest";
import { type Quat, type Vec3, quatMul, rotate } from "../../engine-wasm/ts/accuracy";
import { CUBEMAP_FACES, type ImagesFile } from "../../protocol";
import { RigsFile, FramesFile, ImagesFile as ImagesSchema } from "../../protocol/schemas/snapshot";
import { cubemapRigModel } from "./cubemap-rig";
import { panoramaPixel } from "./panorama-features";

const [W, H] = [2048, 1024];
const points: Vec3[] = Array.from({ length: 200 }, (_, i) => [Math.sin(i * 1.7) * 5, Math.cos(i * 0.9) * 2, Math.sin(i * 2.3 + 1) * 5]);
const poses: { q: Quat; t: Vec3 }[] = [
  { q: [1, 0, 0, 0], t: [0, 0, 0] },
  { q: [Math.cos(0.2), 0, Math.sin(0.2), 0], t: [0.5, 0.1, -0.3] },
];

function panoramaModel() {
  const images: ImagesFile["images"] = poses.map((p, i) => ({
    image_id: i + 1,
    name: `street/pano_${i}.png`,
    camera_id: 1,
    cam_from_world: { rotation: { w: p.q[0], x: p.q[1], y: p.q[2], z: p.q[3] }, translation: p.t },
    points2D: [
      ...points.map((x, j) => {
        const c = rotate(p.q, x);
        return { xy: panoramaPixel([c[0] + p.t[0], c[1] + p.t[1], c[2] + p.t[2]], W, H), point3d_id: j + 1 };
      }),
      { xy: [10, 10] as [number, number], point3d_id: null },
    ],
  }));
  return {
    cameras: { cameras: [{ camera_id: 1, model: "SPHERICAL", width: W, height: H, params: [], has_prior_focal_length: false }] },
    images: { images },
  };
}

describe("cubemapRigModel", () => {
  const rig = cubemapRigModel(panoramaModel(), 512);

  it("makes one 6-sensor rig, one frame per panorama and six PINHOLE faces each", () => {
    RigsFile.parse(rig.rigs);
    FramesFile.parse(rig.frames);
    ImagesSchema.parse(rig.images);
    expect(rig.rigs.rigs).toHaveLength(1);
    expect(Object.keys(rig.rigs.rigs[0]!.sensor_from_rig)).toEqual(["1", "2", "3", "4", "5", "6"]);
    expect(rig.cameras.cameras.map((c) => [c.camera_id, c.model, c.params])).toEqual(
      [1, 2, 3, 4, 5, 6].map((id) => [id, "PINHOLE", [256, 256, 256, 256]]),
    );
    expect(rig.frames.frames.map((f) => [f.frame_id, f.data_ids])).toEqual([
      [1, { 1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6 }],
      [2, { 1: 7, 2: 8, 3: 9, 4: 10, 5: 11, 6: 12 }],
    ]);
    expect(rig.images.images.slice(0, 6).map((i) => i.name)).toEqual(CUBEMAP_FACES.map((f) => `${f}/street/pano_0.jpg`));
    // Every keypoint is kept, on exactly one face.
    expect(rig.images.images.slice(6).reduce((n, i) => n + i.points2D.length, 0)).toBe(points.length + 1);
  });

  it("each face keypoint is where its face camera projects the 3D point", () => {
    let worst = 0;
    for (const image of rig.images.images) {
      const q: Quat = [
        image.cam_from_world.rotation.w,
        image.cam_from_world.rotation.x,
        image.cam_from_world.rotation.y,
        image.cam_from_world.rotation.z,
      ];
      for (const p of image.points2D) {
        expect(p.xy[0]).toBeGreaterThanOrEqual(0);
        expect(p.xy[0]).toBeLessThanOrEqual(512);
        if (p.point3d_id === null) continue;
        const c = rotate(q, points[p.point3d_id - 1]!);
        const [x, y, z] = [
          c[0] + image.cam_from_world.translation[0],
          c[1] + image.cam_from_world.translation[1],
          c[2] + image.cam_from_world.translation[2],
        ];
        expect(z).toBeGreaterThan(0);
        worst = Math.max(worst, Math.hypot((256 * x) / z + 256 - p.xy[0], (256 * y) / z + 256 - p.xy[1]));
      }
    }
    expect(worst).toBeLessThan(1e-6);
  });

  it("the frame's pose is the panorama's and the faces' poses compose with the fixed sensor_from_rig", () => {
    const frame = rig.frames.frames[1]!;
    expect(frame.rig_from_world).toEqual(panoramaModel().images.images[1]!.cam_from_world);
    const right = rig.images.images.find((i) => i.image_id === frame.data_ids["2"])!;
    const s = rig.rigs.rigs[0]!.sensor_from_rig["2"]!.rotation;
    const expected = quatMul([s.w, s.x, s.y, s.z], poses[1]!.q);
    expect([
      right.cam_from_world.rotation.w,
      right.cam_from_world.rotation.x,
      right.cam_from_world.rotation.y,
      right.cam_from_world.rotation.z,
    ]).toEqual(expected);
  });
});
