/**
 * The snapshot view every export reads: tracks rebuilt from images.json and checked against
 * points.bin, refusals named by code, and the degenerate snapshot (nothing registered yet).
 */
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { encodePoints } from "../../../protocol/wire/points";
import { ArtifactDescriptor } from "../../../protocol/artifacts";
import { OPTIONAL_CAPABILITIES } from "../../../protocol/capabilities";
import { buildExportModel, EXPORT_ARTIFACT_TYPES, EXPORT_FORMATS, exportCapability, exportSnapshot } from "./index";
import { exportRefusal, referenceSnapshot } from "./testing/colmap-cli";

function refusalCode(fn: () => unknown): string {
  return exportRefusal(fn)?.code ?? "none";
}

describe("export model", () => {
  it("bundles for a browser: no Node built-in is reachable from the converters", async () => {
    // esbuild (vitest's own bundler, through vite) refuses node: imports on the browser platform.
    const result = await build({
      entryPoints: [fileURLToPath(new URL("./index.ts", import.meta.url))],
      bundle: true,
      platform: "browser",
      format: "esm",
      write: false,
      metafile: true,
      logLevel: "silent",
    });
    expect(result.errors).toEqual([]);
    expect(Object.keys(result.metafile.inputs).filter((f) => f.startsWith("node:"))).toEqual([]);
  });

  it("names each format's artifact with ids a descriptor accepts (2.11: namespaced, never svc.)", async () => {
    const result = exportSnapshot("kapture", await referenceSnapshot("sacre-coeur"));
    for (const format of EXPORT_FORMATS) {
      const type = EXPORT_ARTIFACT_TYPES[format];
      expect(type.artifact_format.startsWith("svc."), format).toBe(false);
      const descriptor = ArtifactDescriptor.safeParse({
        ...type,
        name: `export ${format}`,
        summary: result.summary,
        metadata: { warnings: result.warnings },
        files: [...result.files.keys()].slice(0, 3).map((path) => ({ path, blob_sha: "0".repeat(64), byte_size: 1 })),
      });
      expect(descriptor.error?.issues ?? [], format).toEqual([]);
    }
  });

  it("covers exactly the spec's export capabilities (1.2)", () => {
    expect(EXPORT_FORMATS.map(exportCapability).sort()).toEqual(OPTIONAL_CAPABILITIES.filter((c) => c.startsWith("export.")).sort());
  });

  it("rebuilds every track from images.json: as many observations as keypoints naming a point", async () => {
    const snapshot = await referenceSnapshot("sacre-coeur");
    const model = buildExportModel(snapshot);
    const named = snapshot.images.images.reduce((n, i) => n + i.points2D.filter((p) => p.point3d_id !== null).length, 0);
    expect(model.numObservations).toBe(named);
    expect(model.points.reduce((n, p) => n + p.track.length, 0)).toBe(named);
    for (const p of model.points) {
      for (const el of p.track) expect(model.imageById.get(el.imageId)!.points2D[el.point2DIdx]!.point3d_id).toBe(p.id);
    }
  });

  it("refuses a snapshot whose keypoint names a point absent from points.bin", async () => {
    const snapshot = await referenceSnapshot("sacre-coeur");
    const [first, ...rest] = snapshot.images.images;
    const broken = { ...first!, points2D: [...first!.points2D, { xy: [1, 1] as [number, number], point3d_id: 987654321 }] };
    expect(refusalCode(() => exportSnapshot("ply", { ...snapshot, images: { images: [broken, ...rest] } }))).toBe("inconsistent_snapshot");
  });

  it("refuses a points.bin whose track_len disagrees with images.json", async () => {
    const snapshot = await referenceSnapshot("sacre-coeur");
    const images = { images: snapshot.images.images.slice(1) };
    expect(refusalCode(() => exportSnapshot("colmap_text", { ...snapshot, images }))).toBe("inconsistent_snapshot");
  });

  it("refuses SPHERICAL cameras in COLMAP-based formats, and commas in kapture paths", async () => {
    const snapshot = await referenceSnapshot("sceaux-castle");
    const cameras = { cameras: snapshot.cameras.cameras.map((c) => ({ ...c, model: "SPHERICAL", params: [] })) };
    for (const format of ["colmap_text", "colmap_bin", "nvm", "nerfstudio", "instant_ngp", "gaussian_splatting", "kapture"] as const) {
      expect(
        refusalCode(() => exportSnapshot(format, { ...snapshot, cameras })),
        format,
      ).toBe("unsupported_camera_model");
    }
    expect(refusalCode(() => exportSnapshot("ply", { ...snapshot, cameras }))).toBe("none");
    const images = { images: snapshot.images.images.map((i, k) => (k === 0 ? { ...i, name: "a,b.jpg" } : i)) };
    expect(refusalCode(() => exportSnapshot("kapture", { ...snapshot, images }))).toBe("unsupported_image_name");
  });

  it("an empty snapshot (cameras, no registered images, no points) exports to every format", () => {
    const empty = {
      cameras: {
        cameras: [{ camera_id: 1, model: "PINHOLE", width: 640, height: 480, params: [500, 500, 320, 240], has_prior_focal_length: false }],
      },
      images: { images: [] },
      points: encodePoints({
        xyz: new Float32Array(0),
        rgb: new Uint8Array(0),
        trackLength: new Uint16Array(0),
        ids: new BigUint64Array(0),
      }),
    };
    for (const format of EXPORT_FORMATS) {
      const result = exportSnapshot(format, empty);
      expect(result.files.size, format).toBeGreaterThan(0);
      expect(result.summary).toMatchObject({ num_images: 0, num_points3D: 0, mean_track_length: 0, mean_reproj_err: 0 });
    }
  });
});
