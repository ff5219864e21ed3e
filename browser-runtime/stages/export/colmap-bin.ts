/**
 * @module `export.colmap_bin` (and its alias `export.bin`): cameras.bin, images.bin and
 * points3D.bin in COLMAP 3.8's binary layout (src/base/reconstruction.cc, WriteCamerasBinary /
 * WriteImagesBinary / WritePoints3DBinary; the same layout scripts/python/read_write_model.py
 * reads). All little-endian:
 *   cameras.bin  u64 count; per camera: u32 camera_id, i32 model_id, u64 width, u64 height, f64 params[]
 *   images.bin   u64 count; per image: u32 image_id, f64 qw qx qy qz, f64 tx ty tz, u32 camera_id,
 *                name bytes + NUL, u64 num_points2D, per point: f64 x, f64 y, u64 point3D_id
 *                (2^64 - 1 = kInvalidPoint3DId for a keypoint in no track)
 *   points3D.bin u64 count; per point: u64 point3D_id, f64 x y z, u8 r g b, f64 error,
 *                u64 track_length, per element: u32 image_id, u32 point2D_idx
 */
import { colmapModelId } from "../../../protocol/camera-projection";
import { requireColmapCameras, type ExportModel } from "./export-model";

const INVALID_POINT3D_ID = 0xffffffffffffffffn;
const encoder = new TextEncoder();

/** A growable little-endian byte writer. */
class BinaryWriter {
  private bytes = new Uint8Array(1 << 16);
  private view = new DataView(this.bytes.buffer);
  private length = 0;

  private reserve(n: number): number {
    if (this.length + n > this.bytes.length) {
      let size = this.bytes.length * 2;
      while (size < this.length + n) size *= 2;
      const grown = new Uint8Array(size);
      grown.set(this.bytes.subarray(0, this.length));
      this.bytes = grown;
      this.view = new DataView(grown.buffer);
    }
    const at = this.length;
    this.length += n;
    return at;
  }
  u8(v: number) {
    const at = this.reserve(1); // reserve first: it may replace the view
    this.view.setUint8(at, v);
  }
  u32(v: number) {
    const at = this.reserve(4);
    this.view.setUint32(at, v, true);
  }
  i32(v: number) {
    const at = this.reserve(4);
    this.view.setInt32(at, v, true);
  }
  u64(v: number | bigint) {
    const at = this.reserve(8);
    this.view.setBigUint64(at, BigInt(v), true);
  }
  f64(v: number) {
    const at = this.reserve(8);
    this.view.setFloat64(at, v, true);
  }
  raw(b: Uint8Array) {
    const at = this.reserve(b.length);
    this.bytes.set(b, at);
  }
  finish(): Uint8Array {
    return this.bytes.slice(0, this.length);
  }
}

export function colmapCamerasBinary(model: ExportModel): Uint8Array {
  const w = new BinaryWriter();
  w.u64(model.cameras.length);
  for (const c of model.cameras) {
    w.u32(c.camera_id);
    w.i32(colmapModelId(c.model)!);
    w.u64(c.width);
    w.u64(c.height);
    for (const p of c.params) w.f64(p);
  }
  return w.finish();
}

export function colmapImagesBinary(model: ExportModel): Uint8Array {
  const w = new BinaryWriter();
  w.u64(model.images.length);
  for (const image of model.images) {
    const { w: qw, x, y, z } = image.cam_from_world.rotation;
    w.u32(image.image_id);
    for (const v of [qw, x, y, z, ...image.cam_from_world.translation]) w.f64(v);
    w.u32(image.camera_id);
    w.raw(encoder.encode(image.name));
    w.u8(0);
    w.u64(image.points2D.length);
    for (const p of image.points2D) {
      w.f64(p.xy[0]);
      w.f64(p.xy[1]);
      w.u64(p.point3d_id === null ? INVALID_POINT3D_ID : p.point3d_id);
    }
  }
  return w.finish();
}

export function colmapPoints3DBinary(model: ExportModel): Uint8Array {
  const w = new BinaryWriter();
  w.u64(model.points.length);
  for (const p of model.points) {
    w.u64(p.id);
    for (const v of p.xyz) w.f64(v);
    for (const c of p.rgb) w.u8(c);
    w.f64(p.error);
    w.u64(p.track.length);
    for (const el of p.track) {
      w.u32(el.imageId);
      w.u32(el.point2DIdx);
    }
  }
  return w.finish();
}

/** The three files of a COLMAP binary model, relative to `prefix` (e.g. "" or "sparse/0/"). */
export function exportColmapBinary(model: ExportModel, prefix = ""): Map<string, Uint8Array> {
  requireColmapCameras(model, "COLMAP binary model");
  return new Map([
    [`${prefix}cameras.bin`, colmapCamerasBinary(model)],
    [`${prefix}images.bin`, colmapImagesBinary(model)],
    [`${prefix}points3D.bin`, colmapPoints3DBinary(model)],
  ]);
}
