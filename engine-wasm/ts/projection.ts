/**
 * @module Panorama projections through the wasm engine (src/bindings/projection.cc, the CPU twin
 * of shaders/projection.wgsl): equirectangular -> perspective views and cubemap faces, cubemap ->
 * equirectangular, on packed RGBA images. Geometry and conventions: protocol/projection.ts.
 */
import { CUBEMAP_FACES, type CubemapFace, SAMPLINGS, type Sampling } from "../../protocol/projection";
import type { Engine } from "./engine";

/** 8-bit RGBA packed one pixel per uint32 (r | g << 8 | b << 16 | a << 24), row-major. */
export interface PackedImage {
  data: Uint32Array;
  width: number;
  height: number;
}

/** A pinhole view of a panorama: size, intrinsics and pano_from_cam (row-major 3 x 3). */
export interface PerspectiveView {
  width: number;
  height: number;
  fx: number;
  fy: number;
  cx: number;
  cy: number;
  panoFromCam: readonly number[];
}

const samplingId = (s: Sampling) => SAMPLINGS.indexOf(s);

function render(
  engine: Engine,
  inputs: Uint32Array,
  outWidth: number,
  outHeight: number,
  call: (input: number, output: number) => void,
): PackedImage {
  const m = engine.module;
  return engine.withHeap((heap) => {
    const input = heap.alloc(inputs.byteLength);
    m.HEAPU32.set(inputs, input / 4);
    const output = heap.alloc(outWidth * outHeight * 4);
    call(input, output);
    return { data: engine.module.HEAPU32.slice(output / 4, output / 4 + outWidth * outHeight), width: outWidth, height: outHeight };
  });
}

export function renderPerspective(engine: Engine, pano: PackedImage, view: PerspectiveView, sampling: Sampling): PackedImage {
  return engine.withHeap((heap) => {
    const intrinsics = heap.f64([view.fx, view.fy, view.cx, view.cy]);
    const rotation = heap.f64(view.panoFromCam);
    return render(engine, pano.data, view.width, view.height, (input, output) =>
      engine.call(
        "edgesfm_projection_perspective",
        input,
        pano.width,
        pano.height,
        view.width,
        view.height,
        intrinsics,
        rotation,
        samplingId(sampling),
        output,
      ),
    );
  });
}

export function renderCubemapFace(engine: Engine, pano: PackedImage, face: CubemapFace, faceSize: number, sampling: Sampling): PackedImage {
  return render(engine, pano.data, faceSize, faceSize, (input, output) =>
    engine.call(
      "edgesfm_projection_cubemap_face",
      input,
      pano.width,
      pano.height,
      CUBEMAP_FACES.indexOf(face),
      faceSize,
      samplingId(sampling),
      output,
    ),
  );
}

/** A panorama (width x width / 2) from the six faces of one cubemap, in the cubemap order. */
export function renderEquirectangular(engine: Engine, faces: PackedImage[], width: number, sampling: Sampling): PackedImage {
  const size = faces[0]?.width ?? 0;
  if (faces.length !== 6 || faces.some((f) => f.width !== size || f.height !== size))
    throw new RangeError("renderEquirectangular: six square faces of one size");
  const all = new Uint32Array(6 * size * size);
  faces.forEach((f, i) => all.set(f.data, i * size * size));
  return render(engine, all, width, width / 2, (input, output) =>
    engine.call("edgesfm_projection_equirectangular", input, size, width, width / 2, samplingId(sampling), output),
  );
}

/** The engine's rig_from_face of a face (row-major 3 x 3), to check against protocol/projection.ts. */
export function engineRigFromFace(engine: Engine, face: CubemapFace): number[] {
  return engine.withHeap((heap) => {
    const out = heap.f64(new Float64Array(9));
    engine.call("edgesfm_cubemap_rig_from_face", CUBEMAP_FACES.indexOf(face), out);
    return Array.from(engine.readF64(out, 9));
  });
}

/** Interleaved 8-bit pixels (1 to 4 channels) as packed RGBA: gray is replicated, alpha is 255 where absent. */
export function packRgba(pixels: Uint8Array | Uint8ClampedArray, width: number, height: number, channels: 1 | 2 | 3 | 4): PackedImage {
  const n = width * height;
  if (pixels.length !== n * channels) throw new RangeError(`packRgba: ${pixels.length} bytes for ${width}x${height}x${channels}`);
  if (channels === 4) {
    const copy = new Uint8Array(pixels);
    return { data: new Uint32Array(copy.buffer, 0, n), width, height };
  }
  const out = new Uint8Array(4 * n);
  for (let i = 0; i < n; i++) {
    const p = channels * i;
    const gray = channels <= 2;
    out[4 * i] = pixels[p]!;
    out[4 * i + 1] = gray ? pixels[p]! : pixels[p + 1]!;
    out[4 * i + 2] = gray ? pixels[p]! : pixels[p + 2]!;
    out[4 * i + 3] = channels === 2 ? pixels[p + 1]! : 255;
  }
  return { data: new Uint32Array(out.buffer), width, height };
}

/** The packed image's bytes as interleaved RGBA (a view, no copy). */
export const rgbaBytes = (image: PackedImage) => new Uint8Array(image.data.buffer, image.data.byteOffset, image.data.byteLength);
