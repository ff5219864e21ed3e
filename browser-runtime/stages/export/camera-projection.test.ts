/**
 * The ERROR column of our COLMAP exports against COLMAP's own reprojection: `colmap
 * point_filtering` with an unreachable threshold recomputes every point's error through its camera
 * models (Reconstruction::FilterPoints3DWithLargeReprojectionError sets the mean over the track),
 * so for each of COLMAP's nine models it must reproduce the errors we wrote.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { exportSnapshot } from "./index";
import {
  COLMAP_ABSENT,
  colmapAvailable,
  readText,
  referenceSnapshot,
  runColmap,
  tempDir,
  writeFiles,
  convertModel,
} from "./testing/colmap-cli";

/** Each model with parameters built around the reference camera's f, cx, cy (mild distortion). */
function paramsFor(model: string, f: number, cx: number, cy: number, k: number): number[] {
  switch (model) {
    case "SIMPLE_PINHOLE":
      return [f, cx, cy];
    case "PINHOLE":
      return [f, 1.01 * f, cx, cy];
    case "SIMPLE_RADIAL":
      return [f, cx, cy, k];
    case "RADIAL":
      return [f, cx, cy, k, -0.02];
    case "OPENCV":
      return [f, 0.99 * f, cx, cy, k, 0.01, 0.001, -0.001];
    case "OPENCV_FISHEYE":
      return [f, f, cx, cy, 0.05, -0.01, 0.002, 0.001];
    case "FULL_OPENCV":
      return [f, f, cx, cy, k, 0.01, 0.001, -0.001, 0.002, 0.01, 0.001, 0.0005];
    case "SIMPLE_RADIAL_FISHEYE":
      return [f, cx, cy, 0.05];
    case "RADIAL_FISHEYE":
      return [f, cx, cy, 0.05, -0.01];
    default:
      throw new Error(model);
  }
}

const MODELS = [
  "SIMPLE_PINHOLE",
  "PINHOLE",
  "SIMPLE_RADIAL",
  "RADIAL",
  "OPENCV",
  "OPENCV_FISHEYE",
  "FULL_OPENCV",
  "SIMPLE_RADIAL_FISHEYE",
  "RADIAL_FISHEYE",
];

function errorsById(points3DText: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of points3DText.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const f = line.split(" ");
    out.set(f[0]!, Number(f[7]));
  }
  return out;
}

describe("reprojection errors through every COLMAP camera model", () => {
  // Reported as skipped with its reason, never counted as passed.
  beforeEach((ctx) => ctx.skip(!colmapAvailable, COLMAP_ABSENT));
  it.each(MODELS)("%s: our ERROR column is what colmap point_filtering recomputes", async (model) => {
    const snapshot = await referenceSnapshot("sacre-coeur");
    const cameras = {
      cameras: snapshot.cameras.cameras.map((c) => ({
        ...c,
        model,
        params: paramsFor(model, c.params[0]!, c.params[1]!, c.params[2]!, c.params[3]!),
      })),
    };
    const ours = exportSnapshot("colmap_text", { ...snapshot, cameras });
    // COLMAP gets our model with every ERROR blanked to -1, so only its own recomputation can match ours.
    const blanked = new Map(ours.files);
    const points3D = new TextDecoder().decode(ours.files.get("points3D.txt"));
    const withoutErrors = points3D.split("\n").map((line) => {
      if (line === "" || line.startsWith("#")) return line;
      const f = line.split(" ");
      f[7] = "-1";
      return f.join(" ");
    });
    blanked.set("points3D.txt", new TextEncoder().encode(withoutErrors.join("\n")));
    const filtered = tempDir();
    runColmap([
      "point_filtering",
      "--input_path",
      writeFiles(blanked),
      "--output_path",
      filtered,
      "--min_track_len",
      "0",
      "--max_reproj_error",
      "1e9",
      "--min_tri_angle",
      "0",
    ]);
    const theirs = errorsById(readText(`${convertModel(filtered, "TXT")}/points3D.txt`));
    const mine = errorsById(points3D);
    expect(theirs.size).toBe(mine.size);
    let worst = 0;
    for (const [id, error] of mine) worst = Math.max(worst, Math.abs(error - theirs.get(id)!) / Math.max(1, error));
    expect(worst).toBeLessThan(1e-9);
  });
});
