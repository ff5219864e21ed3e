/**
 * @module Features of an equirectangular panorama found on its cubemap (spec 2.12 `spherical`,
 * `panorama: true`): the panorama is rendered to its six faces (pinhole, 90 degrees; the same
 * kernels as `:render_cubemap`), SIFT runs on each face, where the image is perspective and
 * undistorted, and every keypoint is written back in panorama pixels. Matching, verification and
 * mapping then see SPHERICAL images; bundle adjustment measures each keypoint's residual on the
 * face its ray falls on again (the engine's cubemap rig, sfm/bundle_adjustment_config.h).
 */
import type { SiftFeatures, SiftOptions } from "../../engine-wasm/ts/feature";
import { type PackedImage, rgbaBytes } from "../../engine-wasm/ts/projection";
import { CUBEMAP_FACES, CUBEMAP_RIG_FROM_FACE, type CubemapFace } from "../../protocol";
import type { Projector } from "../gpu/projection-gpu";
import { toGray8 } from "./extract";

/** Panorama pixel (SPHERICAL) of a direction in the panorama's camera frame. */
export function panoramaPixel(ray: readonly [number, number, number], width: number, height: number): [number, number] {
  const [x, y, z] = ray;
  const longitude = Math.atan2(x, z);
  const latitude = Math.atan2(y, Math.hypot(x, z));
  return [(longitude / (2 * Math.PI) + 0.5) * width, (latitude / Math.PI + 0.5) * height];
}

/** The direction (panorama frame) of a face pixel (COLMAP's pixel-centre convention). */
export function faceRay(face: CubemapFace, faceSize: number, x: number, y: number): [number, number, number] {
  const half = faceSize / 2;
  const [u, v] = [(x - half) / half, (y - half) / half];
  const r = CUBEMAP_RIG_FROM_FACE[face];
  return [r[0]! * u + r[1]! * v + r[2]!, r[3]! * u + r[4]! * v + r[5]!, r[6]! * u + r[7]! * v + r[8]!];
}

/**
 * SIFT of a panorama through its cubemap: keypoints in panorama pixels (scale converted at the
 * keypoint by the two images' angular resolutions: panorama rows span pi / height radians, a face
 * pixel 1 / (half (1 + u^2 + v^2)) at (u, v); orientation kept as found on the face), descriptors as
 * found. The feature budget is shared by the faces.
 */
export async function panoramaSift(
  panorama: PackedImage,
  faceSize: number,
  projector: Pick<Projector, "cubemapFace">,
  extract: (gray: Uint8Array, width: number, height: number, options: Partial<SiftOptions>) => Promise<SiftFeatures>,
  options: SiftOptions,
): Promise<SiftFeatures> {
  const faceOptions = { ...options, maxNumFeatures: Math.ceil(options.maxNumFeatures / CUBEMAP_FACES.length) };
  const keypoints: number[] = [];
  const descriptors: Uint8Array[] = [];
  const half = faceSize / 2;
  for (const face of CUBEMAP_FACES) {
    const rendered = await projector.cubemapFace(panorama, face, faceSize, "linear");
    const gray = toGray8({ data: rgbaBytes(rendered), width: faceSize, height: faceSize, channels: 4 });
    const found = await extract(gray, faceSize, faceSize, faceOptions);
    for (let k = 0; k < found.keypoints.length / 4; k++) {
      const [fx, fy, scale, orientation] = [
        found.keypoints[4 * k]!,
        found.keypoints[4 * k + 1]!,
        found.keypoints[4 * k + 2]!,
        found.keypoints[4 * k + 3]!,
      ];
      const [px, py] = panoramaPixel(faceRay(face, faceSize, fx, fy), panorama.width, panorama.height);
      const [u, v] = [(fx - half) / half, (fy - half) / half];
      const radiansPerFacePixel = 1 / (half * (1 + u * u + v * v));
      keypoints.push(px, py, (scale * radiansPerFacePixel * panorama.height) / Math.PI, orientation);
    }
    descriptors.push(found.descriptors);
  }
  const all = new Uint8Array(descriptors.reduce((n, d) => n + d.length, 0));
  let at = 0;
  for (const d of descriptors) {
    all.set(d, at);
    at += d.length;
  }
  return { keypoints: Float32Array.from(keypoints), descriptors: all };
}
