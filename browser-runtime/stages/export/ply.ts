/**
 * @module `export.ply`: the sparse points as a binary little-endian PLY with float x y z and uchar
 * red green blue, the exact header and record layout COLMAP 3.8's `model_converter --output_type
 * PLY` writes (src/base/reconstruction.cc ExportPLY -> src/util/ply.cc WriteBinaryPlyPoints with
 * colours, no normals): 15 bytes per vertex. Points in ascending point3d_id.
 */
import type { Vec3 } from "./geometry";
import type { ExportModel } from "./export-model";

export interface PlyVertices {
  xyz: ArrayLike<number>;
  rgb: ArrayLike<number>;
}

const PLY_RECORD_BYTES = 15;

export function plyHeader(count: number): string {
  return [
    "ply",
    "format binary_little_endian 1.0",
    `element vertex ${count}`,
    "property float x",
    "property float y",
    "property float z",
    "property uchar red",
    "property uchar green",
    "property uchar blue",
    "end_header",
    "",
  ].join("\n");
}

export function encodeBinaryPly(vertices: PlyVertices): Uint8Array {
  const count = vertices.xyz.length / 3;
  const header = new TextEncoder().encode(plyHeader(count));
  const out = new Uint8Array(header.length + PLY_RECORD_BYTES * count);
  out.set(header, 0);
  const view = new DataView(out.buffer);
  for (let i = 0; i < count; i++) {
    const o = header.length + PLY_RECORD_BYTES * i;
    view.setFloat32(o, vertices.xyz[3 * i]!, true);
    view.setFloat32(o + 4, vertices.xyz[3 * i + 1]!, true);
    view.setFloat32(o + 8, vertices.xyz[3 * i + 2]!, true);
    out[o + 12] = vertices.rgb[3 * i]!;
    out[o + 13] = vertices.rgb[3 * i + 1]!;
    out[o + 14] = vertices.rgb[3 * i + 2]!;
  }
  return out;
}

/** The model's points, optionally moved by `transform` (nerfstudio's sparse_pc.ply is in its world). */
export function modelPly(model: ExportModel, transform?: (p: Vec3) => Vec3): Uint8Array {
  const xyz = new Float64Array(3 * model.points.length);
  const rgb = new Uint8Array(3 * model.points.length);
  model.points.forEach((p, i) => {
    xyz.set(transform ? transform(p.xyz) : p.xyz, 3 * i);
    rgb.set(p.rgb, 3 * i);
  });
  return encodeBinaryPly({ xyz, rgb });
}

export function exportPly(model: ExportModel): Map<string, Uint8Array> {
  return new Map([["points3D.ply", modelPly(model)]]);
}
