/**
 * @module A model of panoramas as cubemap rigs (spec 4.13 `:to_cubemap`, 2.12 `spherical`,
 * 2.14 rigs.json / frames.json): every SPHERICAL image becomes the six faces of its cubemap
 * (PINHOLE, 90 degrees, OpenCV axes, front, right, back, left, up, down: protocol/projection.ts),
 * one frame of one 6-sensor rig whose pose is the panorama's. Each keypoint goes to the face its
 * ray falls on, at that face's pixel, keeping its 3D point; images of other cameras are kept as
 * they are. Face images are named as `:render_cubemap` names the faces it renders
 * (`<face>/<panorama stem>.jpg`), and the points (points.bin) do not change.
 */
import { type Quat, type Vec3, quatMul, rotate } from "../../engine-wasm/ts/accuracy";
import {
  CUBEMAP_FACES,
  type CamerasFile,
  type ImagesFile,
  type Rigid3,
  cubemapFaceOfRay,
  cubemapFaceParams,
  cubemapSensorFromRig,
  panoramaRay,
  stemOf,
} from "../../protocol";
import type { FramesFile, RigsFile } from "../../protocol/schemas/snapshot";
import type { z } from "zod";

export interface CubemapRigModel {
  cameras: CamerasFile;
  images: ImagesFile;
  rigs: z.infer<typeof RigsFile>;
  frames: z.infer<typeof FramesFile>;
}

const tuple = (r: Rigid3["rotation"]): Quat => [r.w, r.x, r.y, r.z];
const rotation = (q: Quat): Rigid3["rotation"] => ({ w: q[0], x: q[1], y: q[2], z: q[3] });

/** The sensor ids of the rig: the faces in cubemap order, 1..6 (= their camera ids). */
const SENSOR_IDS = CUBEMAP_FACES.map((_, f) => f + 1);

/**
 * The model with its panoramas as cubemap rigs of `faceSize`-pixel faces. Face image ids are
 * 6 (id - 1) + face + 1 for panorama `id` (so a panorama's faces are consecutive); images of
 * other cameras get 6 (largest id) + their id, their cameras 6 + their id.
 */
export function cubemapRigModel(model: { cameras: CamerasFile; images: ImagesFile }, faceSize: number): CubemapRigModel {
  const spherical = new Map(model.cameras.cameras.filter((c) => c.model === "SPHERICAL").map((c) => [c.camera_id, c]));
  const faceParams = cubemapFaceParams(faceSize);
  const sensors = CUBEMAP_FACES.map((face) => cubemapSensorFromRig(face));
  const maxId = Math.max(0, ...model.images.images.map((i) => i.image_id));
  const cameras: CamerasFile = {
    cameras: [
      ...SENSOR_IDS.map((camera_id) => ({
        camera_id,
        model: "PINHOLE",
        width: faceSize,
        height: faceSize,
        params: faceParams,
        has_prior_focal_length: true,
      })),
      ...model.cameras.cameras.filter((c) => !spherical.has(c.camera_id)).map((c) => ({ ...c, camera_id: 6 + c.camera_id })),
    ],
  };
  const images: ImagesFile["images"] = [];
  const frames: CubemapRigModel["frames"]["frames"] = [];
  const half = faceSize / 2;
  for (const image of [...model.images.images].sort((a, b) => a.image_id - b.image_id)) {
    const pano = spherical.get(image.camera_id);
    if (!pano) {
      images.push({ ...image, image_id: 6 * maxId + image.image_id, camera_id: 6 + image.camera_id });
      continue;
    }
    const faces = CUBEMAP_FACES.map((face, f) => {
      const q = quatMul(tuple(sensors[f]!.rotation), tuple(image.cam_from_world.rotation));
      const t = rotate(tuple(sensors[f]!.rotation), image.cam_from_world.translation as Vec3);
      return {
        image_id: 6 * (image.image_id - 1) + f + 1,
        name: `${face}/${stemOf(image.name)}.jpg`,
        camera_id: SENSOR_IDS[f]!,
        cam_from_world: { rotation: rotation(q), translation: t },
        points2D: [] as ImagesFile["images"][number]["points2D"],
      };
    });
    for (const point of image.points2D) {
      const ray = panoramaRay(point.xy[0], point.xy[1], pano.width, pano.height);
      const f = CUBEMAP_FACES.indexOf(cubemapFaceOfRay(ray));
      const d = rotate(tuple(sensors[f]!.rotation), ray);
      faces[f]!.points2D.push({ xy: [half * (d[0] / d[2]) + half, half * (d[1] / d[2]) + half], point3d_id: point.point3d_id });
    }
    images.push(...faces);
    frames.push({
      frame_id: image.image_id,
      rig_id: 1,
      rig_from_world: image.cam_from_world,
      data_ids: Object.fromEntries(faces.map((face, f) => [String(SENSOR_IDS[f]), face.image_id])),
    });
  }
  return {
    cameras,
    images: { images },
    rigs: {
      rigs:
        spherical.size > 0
          ? [{ rig_id: 1, ref_sensor_id: 1, sensor_from_rig: Object.fromEntries(sensors.map((s, f) => [String(SENSOR_IDS[f]), s])) }]
          : [],
    },
    frames: { frames },
  };
}
