/**
 * The worker's pure snapshot logic on real models: the shared COLMAP reference models, turned
 * into snapshot files by browser-runtime/stages/export/from-colmap.ts, pass every seal check
 * (worker/services/snapshot-files.ts), the observations sidecar's reprojection errors
 * (protocol/camera-projection.ts) agree with the per-point errors COLMAP wrote, and the octree
 * (worker/services/octree.ts) partitions each cloud at every level.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readColmapTextModel } from "../../engine-wasm/ts/colmap-text";
import { readSnapshotFromColmapDir } from "../../browser-runtime/stages/export/from-colmap";
import { DATASETS } from "../../browser-runtime/stages/export/testing/colmap-cli";
import { decodePoints } from "../../protocol/wire/points";
import { buildTiles, maxLevelFor } from "../../worker/services/octree";
import { projectWorld } from "../../protocol/camera-projection";
import { fileProblem, modelProblem } from "../../worker/services/snapshot-files";

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

describe.each(["opensfm-lund", "sacre-coeur", "sceaux-castle"])("reference model %s", (set) => {
  const dir = join(DATASETS, set, "reference");

  it("its snapshot files pass the seal checks; a corrupted copy does not", async () => {
    const snap = await readSnapshotFromColmapDir(dir);
    expect(fileProblem("cameras.json", enc(snap.cameras))).toBeNull();
    expect(fileProblem("images.json", enc(snap.images))).toBeNull();
    expect(fileProblem("summary.json", enc(snap.summary))).toBeNull();
    expect(fileProblem("points.bin", snap.points)).toBeNull();
    const model = (images: unknown) =>
      new Map([
        ["cameras.json", enc(snap.cameras)],
        ["images.json", enc(images)],
        ["points.bin", snap.points],
        ["summary.json", enc(snap.summary)],
      ]);
    expect(modelProblem(model(snap.images))).toBeNull();
    // A map result whose poses do not explain its observations (every camera moved by a tenth of the scene) is refused.
    const moved = {
      images: snap.images.images.map((im) => ({
        ...im,
        cam_from_world: { ...im.cam_from_world, translation: im.cam_from_world.translation.map((t) => t + 0.1 * (1 + Math.abs(t))) },
      })),
    };
    expect(modelProblem(model(moved))).toMatch(/reproject with a mean error of [\d.]+ px; summary\.json states/);
    expect(fileProblem("images.json", enc(snap.cameras))).toMatch(/images\.json schema/);
    expect(fileProblem("points.bin", snap.points.subarray(0, snap.points.byteLength - 1))).toMatch(/26-byte records/);
  });

  it("mean reprojection error per point matches COLMAP's ERROR column", async () => {
    const [snap, model] = await Promise.all([readSnapshotFromColmapDir(dir), readColmapTextModel(dir)]);
    const cloud = decodePoints(snap.points);
    const xyz = new Map<number, [number, number, number]>();
    for (let i = 0; i < cloud.count; i++) xyz.set(Number(cloud.ids[i]), [cloud.xyz[3 * i]!, cloud.xyz[3 * i + 1]!, cloud.xyz[3 * i + 2]!]);
    const sums = new Map<number, { sum: number; n: number }>();
    for (const image of snap.images.images) {
      const camera = snap.cameras.cameras.find((c) => c.camera_id === image.camera_id)!;
      image.points2D.forEach((p) => {
        if (p.point3d_id === null) return;
        const px = projectWorld(camera, image.cam_from_world, xyz.get(p.point3d_id)!);
        expect(px).not.toBeNull();
        const acc = sums.get(p.point3d_id) ?? { sum: 0, n: 0 };
        acc.sum += Math.hypot(px![0] - p.xy[0], px![1] - p.xy[1]);
        acc.n += 1;
        sums.set(p.point3d_id, acc);
      });
    }
    const diffs = [...model.points3D.values()]
      .filter((p) => p.error >= 0 && sums.has(p.point3DId))
      .map((p) => Math.abs(sums.get(p.point3DId)!.sum / sums.get(p.point3DId)!.n - p.error));
    expect(diffs.length).toBeGreaterThan(0.9 * model.points3D.size);
    // Measured: at most 5e-5 px on the three sets (float32 positions against COLMAP's doubles).
    expect(Math.max(...diffs)).toBeLessThan(1e-3);
  });
});

describe.each(["sacre-coeur", "sceaux-castle"])("octree tiles of reference model %s", (set) => {
  it("every point lies in exactly one tile per level, inside its half-open cell, in ascending id order", async () => {
    const snap = await readSnapshotFromColmapDir(join(DATASETS, set, "reference"));
    const cloud = decodePoints(snap.points);
    const maxLevel = maxLevelFor(cloud.count);
    const { index, tiles } = buildTiles(cloud, maxLevel);
    expect(index.tile_count).toBe(tiles.length);
    for (let level = 0; level <= maxLevel; level++) {
      const side = 2 ** level;
      const ids: bigint[] = [];
      for (const t of tiles.filter((t) => t.level === level)) {
        const tile = decodePoints(t.bytes);
        expect(tile.count).toBe(t.count);
        [t.x, t.y, t.z].forEach((c, k) => {
          for (let i = 0; i < tile.count; i++) {
            const v = tile.xyz[3 * i + k]!;
            expect(v).toBeGreaterThanOrEqual(tile.bboxMin[k]!);
            if (c < side - 1) expect(v).toBeLessThan(tile.bboxMax[k]!);
            else expect(v).toBeLessThanOrEqual(index.bbox_max[k]!);
          }
        });
        for (let i = 1; i < tile.count; i++) expect(tile.ids[i]! > tile.ids[i - 1]!).toBe(true);
        ids.push(...tile.ids);
      }
      expect(ids.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual([...cloud.ids]);
    }
  });
});
