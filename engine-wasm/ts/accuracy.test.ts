import { describe, expect, it } from "vitest";
import {
  applySimilarity,
  barFailures,
  compareToReference,
  estimateSimilarity,
  parseColmapResultsTsv,
  quatConj,
  quatMul,
  referencePoses,
  rotate,
  type ImagePose,
  type Quat,
  type Similarity,
  type Vec3,
} from "./accuracy";
import { readColmapTextModel } from "./colmap-text";

const DATASETS = new URL("../../../shared/datasets/", import.meta.url).pathname;

function normalize(q: Quat): Quat {
  const n = Math.hypot(...q);
  return q.map((x) => x / n) as Quat;
}

/** The same cameras seen from another world frame: x_other = s R x + t, i.e. ours = inverse. */
function moveToOtherFrame(poses: ImagePose[], s: Similarity): ImagePose[] {
  // cam_from_other = cam_from_world * world_from_other; with x_other = s R x + t:
  // R_cam' = R_cam R^T, t' = s t_cam - R_cam' t (a camera's scale changes with the world).
  return poses.map((p) => {
    const q = normalize(quatMul(p.qvec, quatConj(s.rotation)));
    const rt = rotate(q, s.translation);
    return { name: p.name, qvec: q, tvec: [s.scale * p.tvec[0] - rt[0], s.scale * p.tvec[1] - rt[1], s.scale * p.tvec[2] - rt[2]] };
  });
}
describe("accuracy against a COLMAP reference", () => {
  it("estimates a similarity exactly from noise-free points", () => {
    const truth: Similarity = { scale: 2.5, rotation: normalize([0.9, 0.1, -0.3, 0.2]), translation: [1, -2, 3] };
    const src: Vec3[] = [
      [0, 0, 0],
      [1, 0, 0],
      [0, 2, 0],
      [0, 0, 3],
      [1, 1, 1],
    ];
    const dst = src.map((p) => applySimilarity(truth, p));
    const est = estimateSimilarity(src, dst);
    expect(est.scale).toBeCloseTo(2.5, 10);
    for (let i = 0; i < src.length; i += 1) {
      const p = applySimilarity(est, src[i]!);
      for (let k = 0; k < 3; k += 1) expect(p[k]).toBeCloseTo(dst[i]![k]!, 9);
    }
  });

  it("scores a reference against itself in another frame as exact, with one bad image tolerated", async () => {
    const reference = referencePoses(await readColmapTextModel(`${DATASETS}sceaux-castle/reference`, { points3D: false }));
    const inverse: Similarity = { scale: 0.4, rotation: normalize([0.3, -0.5, 0.7, 0.1]), translation: [5, 6, -7] };
    const ours = moveToOtherFrame(reference, inverse);
    const exact = compareToReference(ours, reference);
    expect(exact.numRegistered).toBe(reference.length);
    expect(exact.maxRotationErrorDeg).toBeLessThan(1e-6);
    expect(exact.maxCenterErrorFraction).toBeLessThan(1e-9);
    expect(barFailures(exact, 0.5, 0.6)).toEqual([]);

    // Move one camera far off and drop another: the alignment ignores the outlier,
    // which alone fails the centre bar; the dropped image is reported missing.
    const broken = ours.slice(1).map((p, i) => (i === 3 ? { ...p, tvec: [p.tvec[0] + 3, p.tvec[1], p.tvec[2]] as Vec3 } : p));
    const report = compareToReference(broken, reference);
    expect(report.missing).toEqual([reference[0]!.name]);
    expect(report.numAlignmentInliers).toBe(reference.length - 2);
    expect(report.medianRotationErrorDeg).toBeLessThan(1e-6);
    const failures = barFailures(report, 0.7, 0.6);
    expect(failures).toHaveLength(3);
  });

  it("aligns cameras along a straight street by their orientations too", async () => {
    // opensfm-lund's centres lie near one line: they leave the rotation about it free.
    const reference = referencePoses(await readColmapTextModel(`${DATASETS}opensfm-lund/reference`, { points3D: false }));
    const inverse: Similarity = { scale: 0.4, rotation: normalize([0.3, -0.5, 0.7, 0.1]), translation: [5, 6, -7] };
    // Centres off by up to 0.2% of the extent (~12 units, 0.4 here), orientations exact.
    const ours = moveToOtherFrame(reference, inverse).map((p, i) => {
      const offset = rotate(p.qvec, [0.01 * Math.sin(3 * i), 0.01 * Math.cos(5 * i), 0]);
      return { ...p, tvec: [p.tvec[0] - offset[0], p.tvec[1] - offset[1], p.tvec[2] - offset[2]] as Vec3 };
    });
    const report = compareToReference(ours, reference);
    expect(report.maxRotationErrorDeg).toBeLessThan(0.02);
    expect(report.maxCenterErrorFraction).toBeLessThan(0.005);
  });

  it("reads COLMAP's result table", () => {
    const rows = parseColmapResultsTsv("set\tregistered\tmean_reproj_px\nsacre-coeur\t10\t0.346893\n");
    expect(rows).toEqual([{ set: "sacre-coeur", registered: 10, mean_reproj_px: 0.346893 }]);
  });
});
