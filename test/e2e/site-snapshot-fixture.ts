/**
 * @module Test fixture only: a sealed-snapshot file set (spec 2.14: cameras.json, images.json,
 * points.bin) made from a shared set's COLMAP reference model, so the site's 3D view can be
 * exercised before the pipeline produces snapshots. Never shipped as a result.
 */
import { readSnapshotFromColmapDir } from "../../browser-runtime/stages/export/from-colmap";
import { decodePointsHeader } from "../../protocol/wire/points";

export interface SnapshotFixture {
  files: Record<string, Uint8Array>;
  cameraCount: number;
  pointCount: number;
}

export async function snapshotFromReference(referenceDir: string): Promise<SnapshotFixture> {
  const snapshot = await readSnapshotFromColmapDir(referenceDir);
  const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
  return {
    files: { "cameras.json": json(snapshot.cameras), "images.json": json(snapshot.images), "points.bin": snapshot.points },
    cameraCount: snapshot.cameras.cameras.length,
    pointCount: decodePointsHeader(snapshot.points).count,
  };
}
