/**
 * `export.gaussian_splatting` (COLMAP binary model under sparse/0 plus images/, as 3DGS's
 * readColmapSceneInfo reads it) and `export.kapture` (kapture 1.1, read back here with a reader
 * written from kapture_format.adoc and handed to COLMAP as a text model).
 */
import { describe, expect, it } from "vitest";
import { readTar } from "../../../protocol/wire/tar";
import { buildExportModel, ExportError, exportSnapshot } from "./index";
import { snapshotFromColmapText } from "./from-colmap";
import {
  analyzeModel,
  COLMAP_ABSENT,
  colmapAvailable,
  exportRefusal,
  tempDir,
  EXPORT_TEST_SETS,
  referenceDir,
  referencePhotos,
  referenceSnapshot,
  writeFiles,
} from "./testing/colmap-cli";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const decoder = new TextDecoder();

function refusal(fn: () => unknown): ExportError {
  const error = exportRefusal(fn);
  expect(error, "expected an ExportError").toBeInstanceOf(ExportError);
  return error!;
}

describe.each(EXPORT_TEST_SETS)("Gaussian splatting export of %s", (set) => {
  it("refuses distorted (SIMPLE_RADIAL) cameras by default, naming them", async () => {
    const snapshot = await referenceSnapshot(set);
    const error = refusal(() => exportSnapshot("gaussian_splatting", snapshot));
    expect(error.code).toBe("unsupported_camera_model");
    expect(error.message).toMatch(/SIMPLE_RADIAL/);
  });

  it("with allowDistortedCameras writes sparse/0/*.bin unchanged and says so in its warnings", async () => {
    const snapshot = await referenceSnapshot(set);
    const result = exportSnapshot("gaussian_splatting", snapshot, { allowDistortedCameras: true });
    expect([...result.files.keys()].sort()).toEqual(["sparse/0/cameras.bin", "sparse/0/images.bin", "sparse/0/points3D.bin"]);
    expect(result.warnings.join("\n")).toMatch(/distorted .* PINHOLE\/SIMPLE_PINHOLE/);
    expect(result.warnings.join("\n")).toMatch(/photos not included/);
  });

  it("COLMAP's model_analyzer reads its sparse/0 with every point and registered image", async (ctx) => {
    ctx.skip(!colmapAvailable, COLMAP_ABSENT);
    const result = exportSnapshot("gaussian_splatting", await referenceSnapshot(set), { allowDistortedCameras: true });
    expect(analyzeModel(join(writeFiles(result.files), "sparse/0"))).toMatchObject({
      Points: String(result.summary.num_points3D),
      "Registered images": String(result.summary.num_images),
    });
  });

  it("pinhole cameras pass without camera warnings; cameras.bin carries model ids 0 or 1 as 3DGS checks", async () => {
    const snapshot = await referenceSnapshot(set);
    const cameras = { cameras: snapshot.cameras.cameras.map((c) => ({ ...c, model: "SIMPLE_PINHOLE", params: c.params.slice(0, 3) })) };
    const result = exportSnapshot("gaussian_splatting", { ...snapshot, cameras });
    expect(result.warnings.filter((w) => /distorted/.test(w))).toEqual([]);
    const bin = result.files.get("sparse/0/cameras.bin")!;
    const view = new DataView(bin.buffer, bin.byteOffset, bin.byteLength);
    expect(Number(view.getBigUint64(0, true))).toBe(cameras.cameras.length);
    let offset = 8;
    for (let i = 0; i < cameras.cameras.length; i++) {
      expect(view.getInt32(offset + 4, true)).toBe(0);
      offset += 4 + 4 + 8 + 8 + 3 * 8;
    }
  });
});

describe("photos in exports", () => {
  it("gaussian_splatting copies every registered image under images/, and refuses when one is missing", async () => {
    const snapshot = await referenceSnapshot("sacre-coeur");
    const photos = referencePhotos("sacre-coeur");
    const result = exportSnapshot("gaussian_splatting", snapshot, { allowDistortedCameras: true, photos });
    for (const image of snapshot.images.images) expect(result.files.get(`images/${image.name}`)).toBe(photos.get(image.name));
    expect(result.warnings.join()).not.toMatch(/photos not included/);
    const fewer = new Map([...photos].slice(1));
    expect(refusal(() => exportSnapshot("nerfstudio", snapshot, { photos: fewer })).code).toBe("missing_image");
  });

  it("referenced photos are listed where each format expects them, with no bytes copied", async () => {
    const snapshot = await referenceSnapshot("sacre-coeur");
    const names = snapshot.images.images.map((i) => i.name).sort();
    for (const [format, dir] of [
      ["nerfstudio", "images"],
      ["instant_ngp", "images"],
      ["kapture", "sensors/records_data"],
    ] as const) {
      const result = exportSnapshot(format, snapshot, { photos: "referenced" });
      expect(result.photos.map((p) => p.image_name).sort()).toEqual(names);
      for (const p of result.photos) expect(p.path).toBe(`${dir}/${p.image_name}`);
      expect([...result.files.keys()].filter((k) => k.startsWith(`${dir}/`))).toEqual([]);
      expect(result.warnings.join()).not.toMatch(/photos not included/);
    }
    expect(exportSnapshot("ply", snapshot, { photos: "referenced" }).photos).toEqual([]);
  });

  it("past an artifact's file limit, kapture packs its keypoints into keypoints.tar, and photos that still do not fit are left out with a warning", async () => {
    const snapshot = await referenceSnapshot("sacre-coeur");
    const n = snapshot.images.images.length;
    const loose = exportSnapshot("kapture", snapshot, { photos: "referenced" });
    expect(loose.files.size + loose.photos.length).toBe(6 + 2 * n);
    const packed = exportSnapshot("kapture", snapshot, { photos: "referenced", maxFiles: 7 + n });
    expect(packed.files.size).toBe(7);
    expect(packed.photos).toHaveLength(n);
    const members = readTar(packed.files.get("reconstruction/keypoints/edgesfm/keypoints.tar")!);
    for (const image of snapshot.images.images)
      expect(members.get(`${image.name}.kpt`)).toEqual(loose.files.get(`reconstruction/keypoints/edgesfm/${image.name}.kpt`));
    const tight = exportSnapshot("kapture", snapshot, { photos: "referenced", maxFiles: 8 });
    expect(tight.photos).toEqual([]);
    expect(tight.warnings.join()).toMatch(/photos not included: 10 photos would take the export past the 8 files/);
    expect(refusal(() => exportSnapshot("kapture", snapshot, { maxFiles: 5 })).code).toBe("too_many_files");
  });
});

/** A kapture 1.1 text file's rows (after the version line and comments), split on commas. */
function kaptureRows(bytes: Uint8Array | undefined): string[][] {
  expect(bytes).toBeDefined();
  const lines = decoder.decode(bytes).split("\n");
  expect(lines[0]).toBe("# kapture format: 1.1");
  return lines
    .slice(1)
    .filter((l) => l.trim() !== "" && !l.startsWith("#"))
    .map((l) => l.split(",").map((f) => f.trim()));
}

/** kapture -> COLMAP text model, per kapture_format.adoc (poses world-to-device, as COLMAP's). */
function kaptureToColmapText(files: Map<string, Uint8Array>, keypointsType: string): { cameras: string; images: string; points3D: string } {
  const sensors = kaptureRows(files.get("sensors/sensors.txt"));
  const cameraIds = new Map(sensors.map((s, i) => [s[0]!, i + 1]));
  const cameras = sensors.map((s) => {
    expect(s[2]).toBe("camera");
    return [cameraIds.get(s[0]!), s[3], ...s.slice(4)].join(" ");
  });
  const records = kaptureRows(files.get("sensors/records_camera.txt"));
  const poses = new Map(kaptureRows(files.get("sensors/trajectories.txt")).map((t) => [`${t[0]}/${t[1]}`, t.slice(2)]));
  expect(kaptureRows(files.get(`reconstruction/keypoints/${keypointsType}/keypoints.txt`))).toEqual([[keypointsType, "float32", "2"]]);
  const points = kaptureRows(files.get("reconstruction/points3d.txt"));
  const observations = kaptureRows(files.get("reconstruction/observations.txt"));
  const imageIdByPath = new Map(records.map((r, i) => [r[2]!, i + 1]));
  // point3D id -> observations; keypoint -> point3D id
  const pointOfKeypoint = new Map<string, number>();
  const tracks = new Map<number, string[]>();
  for (const o of observations) {
    expect(o[1]).toBe(keypointsType);
    const id = Number(o[0]);
    for (let k = 2; k < o.length; k += 2) {
      pointOfKeypoint.set(`${o[k]}#${o[k + 1]}`, id);
      tracks.set(id, [...(tracks.get(id) ?? []), String(imageIdByPath.get(o[k]!)), o[k + 1]!]);
    }
  }
  const images: string[] = [];
  for (const [timestamp, device, path] of records) {
    const kpt = files.get(`reconstruction/keypoints/${keypointsType}/${path}.kpt`)!;
    const view = new DataView(kpt.buffer, kpt.byteOffset, kpt.byteLength);
    const fields: string[] = [];
    for (let k = 0; k < kpt.byteLength / 8; k++) {
      fields.push(
        String(view.getFloat32(8 * k, true)),
        String(view.getFloat32(8 * k + 4, true)),
        String(pointOfKeypoint.get(`${path}#${k}`) ?? -1),
      );
    }
    images.push(
      [imageIdByPath.get(path!), ...poses.get(`${timestamp}/${device}`)!, cameraIds.get(device!), path].join(" "),
      fields.join(" "),
    );
  }
  const points3D = points.map((p, id) => [id, ...p, -1, ...(tracks.get(id) ?? [])].join(" "));
  return { cameras: cameras.join("\n") + "\n", images: images.join("\n") + "\n", points3D: points3D.join("\n") + "\n" };
}

describe.each(EXPORT_TEST_SETS)("kapture export of %s", (set) => {
  it("read back per the kapture 1.1 spec, it is the same reconstruction: the same points, observations and reprojection error", async () => {
    const snapshot = await referenceSnapshot(set);
    const result = exportSnapshot("kapture", snapshot);
    const text = kaptureToColmapText(result.files, "edgesfm");
    const reread = buildExportModel(snapshotFromColmapText(text));
    const original = buildExportModel(snapshot);
    expect(reread.points.length).toBe(original.points.length);
    expect(reread.numObservations).toBe(original.numObservations);
    expect(Math.abs(reread.meanReprojectionError - original.meanReprojectionError)).toBeLessThan(1e-6);
  });

  it("read back, COLMAP's model_analyzer counts what it counts in the reference model", async (ctx) => {
    ctx.skip(!colmapAvailable, COLMAP_ABSENT);
    const text = kaptureToColmapText(exportSnapshot("kapture", await referenceSnapshot(set)).files, "edgesfm");
    const dir = tempDir();
    for (const [name, body] of Object.entries(text)) writeFileSync(join(dir, `${name}.txt`), body);
    const { "Mean reprojection error": _ours, ...counts } = analyzeModel(dir);
    const { "Mean reprojection error": _theirs, ...expected } = analyzeModel(referenceDir(set));
    expect(counts).toEqual(expected);
  });

  it("holds one .kpt of 8 bytes per keypoint per image and the photos under sensors/records_data when given", async () => {
    const snapshot = await referenceSnapshot(set);
    const result = exportSnapshot("kapture", snapshot, { keypointsType: "sift_gpu" });
    for (const image of snapshot.images.images) {
      expect(result.files.get(`reconstruction/keypoints/sift_gpu/${image.name}.kpt`)!.byteLength).toBe(8 * image.points2D.length);
    }
    if (set === "sacre-coeur") {
      const photos = referencePhotos(set);
      const withPhotos = exportSnapshot("kapture", snapshot, { photos });
      for (const image of snapshot.images.images)
        expect(withPhotos.files.get(`sensors/records_data/${image.name}`)).toBe(photos.get(image.name));
    }
  });
});
