// The wasm projections: the engine's cubemap table is protocol/projection.ts's, faces see the
// directions they should, and views are placed by their rotation.
import { describe, expect, it } from "vitest";
import { CUBEMAP_FACES, CUBEMAP_RIG_FROM_FACE, cubemapFaceParams, viewRotation } from "../../protocol/projection";
import { loadEngine } from "./engine";
import { engineRigFromFace, packRgba, renderCubemapFace, renderEquirectangular, renderPerspective } from "./projection";

const engine = await loadEngine();

/** A panorama whose colour is its viewing direction: (1 + d) * 127.5 per axis (SPHERICAL geometry). */
function directionPanorama(width: number, height: number) {
  const rgba = new Uint8Array(4 * width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const lon = ((x + 0.5) / width - 0.5) * 2 * Math.PI;
      const lat = ((y + 0.5) / height - 0.5) * Math.PI;
      const d = [Math.cos(lat) * Math.sin(lon), Math.sin(lat), Math.cos(lat) * Math.cos(lon)];
      rgba.set([...d.map((v) => Math.round((1 + v) * 127.5)), 255], 4 * (y * width + x));
    }
  }
  return packRgba(rgba, width, height, 4);
}

const channel = (p: number, c: number) => (p >>> (8 * c)) & 0xff;

describe("wasm projections", () => {
  it("the engine's cubemap rig is protocol/projection.ts's", () => {
    for (const face of CUBEMAP_FACES) expect(engineRigFromFace(engine, face)).toEqual([...CUBEMAP_RIG_FROM_FACE[face]]);
  });

  it("each face centre looks along its axis; yaw 90 is the right face", () => {
    const pano = directionPanorama(256, 128);
    const axes = { front: [0, 0, 1], right: [1, 0, 0], back: [0, 0, -1], left: [-1, 0, 0], up: [0, -1, 0], down: [0, 1, 0] };
    for (const face of CUBEMAP_FACES) {
      const img = renderCubemapFace(engine, pano, face, 64, "linear");
      const centre = img.data[32 * 64 + 32]!;
      axes[face].forEach((v, c) => expect(Math.abs(channel(centre, c) - (1 + v) * 127.5)).toBeLessThan(4));
    }
    const [f, , c] = cubemapFaceParams(64) as number[];
    const yawed = renderPerspective(
      engine,
      pano,
      { width: 64, height: 64, fx: f!, fy: f!, cx: c!, cy: c!, panoFromCam: viewRotation(90, 0, 0) },
      "cubic",
    );
    expect(yawed.data).toEqual(renderCubemapFace(engine, pano, "right", 64, "cubic").data);
  });

  it("a cubemap renders back to the panorama", () => {
    const pano = directionPanorama(256, 128);
    const faces = CUBEMAP_FACES.map((face) => renderCubemapFace(engine, pano, face, 96, "lanczos"));
    const back = renderEquirectangular(engine, faces, 256, "lanczos");
    let worst = 0;
    for (let i = 0; i < back.data.length; i++)
      for (let c = 0; c < 3; c++) worst = Math.max(worst, Math.abs(channel(back.data[i]!, c) - channel(pano.data[i]!, c)));
    expect(worst).toBeLessThanOrEqual(6);
  });

  it("packs gray and RGB pixels", () => {
    expect(Array.from(packRgba(new Uint8Array([7]), 1, 1, 1).data)).toEqual([0xff070707]);
    expect(Array.from(packRgba(new Uint8Array([1, 2, 3]), 1, 1, 3).data)).toEqual([0xff030201]);
  });
});
