// The WGSL projections against their wasm twin (engine-wasm/src/image/projection.cc): every
// sampling kernel, cubemap faces, a tilted perspective view and cubemap -> equirectangular.
// Runs on Dawn with a software Vulkan driver, so images are small.
import { describe, expect, it } from "vitest";
import { loadEngine } from "../../engine-wasm/ts/engine";
import { type PackedImage, packRgba, renderCubemapFace, renderEquirectangular, renderPerspective } from "../../engine-wasm/ts/projection";
import { CUBEMAP_FACES, SAMPLINGS, viewRotation } from "../../protocol/projection";
import { ProjectionGpu, selectProjector } from "./projection-gpu";
import { loadShaderSources } from "./shader-sources";
import { testGpu } from "./test-support";

const gpu = await testGpu();
const engine = await loadEngine();

/** A textured panorama: smooth gradients plus a pseudo-random texture with sharp edges. */
function texturedPanorama(width: number, height: number): PackedImage {
  const rgba = new Uint8Array(4 * width * height);
  let state = 12345;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      state = (state * 1664525 + 1013904223) >>> 0;
      const block = ((x >> 3) + (y >> 3)) % 2 ? 60 : 0;
      rgba.set([(x * 255) / width, (y * 255) / height, block + (state >>> 25), 255], 4 * (y * width + x));
    }
  }
  return packRgba(rgba, width, height, 4);
}

/** Pixels whose channels differ by more than `tolerance`, as a fraction, and the largest difference. */
function difference(a: PackedImage, b: PackedImage, tolerance: number) {
  expect([b.width, b.height]).toEqual([a.width, a.height]);
  let off = 0;
  let worst = 0;
  for (let i = 0; i < a.data.length; i++) {
    let d = 0;
    for (let c = 0; c < 4; c++) d = Math.max(d, Math.abs(((a.data[i]! >>> (8 * c)) & 0xff) - ((b.data[i]! >>> (8 * c)) & 0xff)));
    worst = Math.max(worst, d);
    if (d > tolerance) off++;
  }
  return { fraction: off / a.data.length, worst };
}

describe.skipIf("error" in gpu)("WGSL projections agree with the wasm twin", async () => {
  if ("error" in gpu) return;
  const kernels = new ProjectionGpu(gpu.device, await loadShaderSources());
  const pano = texturedPanorama(256, 128);

  // Linear and higher kernels: within one level (f32 trigonometry differs by an ulp or two);
  // nearest picks a different source pixel only where a coordinate sits on a pixel boundary.
  const expectAgreement = (a: PackedImage, b: PackedImage, sampling: string) => {
    const d = difference(a, b, 1);
    if (sampling === "nearest") expect(d.fraction).toBeLessThan(0.002);
    else expect(d).toEqual({ fraction: 0, worst: expect.any(Number) });
  };

  it.each(SAMPLINGS)("cubemap faces, %s", async (sampling) => {
    for (const face of CUBEMAP_FACES) {
      expectAgreement(renderCubemapFace(engine, pano, face, 64, sampling), await kernels.cubemapFace(pano, face, 64, sampling), sampling);
    }
  });

  it.each(SAMPLINGS)("a tilted, rolled perspective view, %s", async (sampling) => {
    const view = { width: 80, height: 60, fx: 50, fy: 50, cx: 40, cy: 30, panoFromCam: viewRotation(33, 71, -12) };
    expectAgreement(renderPerspective(engine, pano, view, sampling), await kernels.perspective(pano, view, sampling), sampling);
  });

  it.each(SAMPLINGS)("cubemap to equirectangular, %s", async (sampling) => {
    const faces = CUBEMAP_FACES.map((face) => renderCubemapFace(engine, pano, face, 48, "linear"));
    expectAgreement(renderEquirectangular(engine, faces, 192, sampling), await kernels.equirectangular(faces, 192, sampling), sampling);
  });

  it("the runner measures both paths and binds the faster", async () => {
    const projector = await selectProjector(engine, gpu, await loadShaderSources());
    console.log("projection calibration on", gpu.description, projector.timings, "->", projector.path);
    expect(projector.path).toBe(projector.timings.gpu! < projector.timings.wasm ? "webgpu" : "wasm");
  });
});

describe("projection path without a GPU", () => {
  it("is the wasm path", async () => {
    const projector = await selectProjector(engine, undefined);
    expect(projector.path).toBe("wasm");
    const face = await projector.cubemapFace(texturedPanorama(64, 32), "up", 64, "nearest");
    expect(face.data.length).toBe(64 * 64);
  });
});
