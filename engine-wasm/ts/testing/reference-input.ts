/**
 * @module Mapping input from a COLMAP reference model (its observations standing in for our
 * features, wrong matches injected and every pair verified as the `verify` stage would), shared
 * by the mapping tests on the shared sets.
 */
import type { ImagePose } from "../accuracy";
import { sharedObservations, type ColmapModel } from "../colmap-text";
import type { Engine } from "../engine";
import type { MappedModel, MappingInput } from "../mapping";
import { verifyTwoView } from "../two-view";

const OUTLIER_MATCH_RATIO = 0.1;

/** Deterministic pseudo-random numbers (mulberry32) for the injected outliers. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Mapping input from a reference model: its keypoints, true matches + outliers verified
 * by two-view geometry (inliers and type kept), default cameras.
 */
export function mappingInputFromReference(
  engine: Engine,
  reference: ColmapModel,
  outlierRatio = OUTLIER_MATCH_RATIO,
): { input: MappingInput; names: string[] } {
  const images = [...reference.images.values()].sort((a, b) => a.name.localeCompare(b.name));
  const cameraIds = [...new Set(images.map((im) => im.cameraId))];
  const cameras = cameraIds.map((id) => {
    const c = reference.cameras.get(id)!;
    return {
      model: "SIMPLE_RADIAL",
      width: c.width,
      height: c.height,
      params: [1.2 * Math.max(c.width, c.height), c.width / 2, c.height / 2, 0],
    };
  });
  const random = prng(5);
  const pairs: MappingInput["pairs"] = [];
  for (let i = 0; i < images.length; i += 1) {
    for (let j = i + 1; j < images.length; j += 1) {
      const matches = sharedObservations(images[i]!, images[j]!).flat();
      if (matches.length === 0) continue;
      const n1 = images[i]!.xys.length / 2,
        n2 = images[j]!.xys.length / 2;
      const numOutliers = Math.round((outlierRatio * matches.length) / 2);
      for (let k = 0; k < numOutliers; k += 1) matches.push(Math.floor(random() * n1), Math.floor(random() * n2));
      const size = (im: (typeof images)[number]) => reference.cameras.get(im.cameraId)!;
      const verified = verifyTwoView(engine, {
        keypoints1: images[i]!.xys,
        keypoints2: images[j]!.xys,
        camera1: { model: null, width: size(images[i]!).width, height: size(images[i]!).height },
        camera2: { model: null, width: size(images[j]!).width, height: size(images[j]!).height },
        matches,
        options: { seed: 1 },
      });
      pairs.push({ image1: i, image2: j, matches: Int32Array.from(verified.inlier_matches.flat()), type: verified.type });
    }
  }
  return {
    input: {
      cameras,
      images: images.map((im) => ({ camera: cameraIds.indexOf(im.cameraId), keypoints: im.xys })),
      pairs,
    },
    names: images.map((im) => im.name),
  };
}

export function posesOf(model: MappedModel, names: string[]): ImagePose[] {
  return model.images.map((im) => ({ name: names[im.image]!, qvec: im.qvec, tvec: im.tvec }));
}
