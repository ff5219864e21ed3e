import { describe, expect, it } from "vitest";
import { cameraModelId, createEngine, loadEngine, validateCamera } from "../index";

describe("engine loader", () => {
  it("loads the wasm module in Node and checks its ABI version", async () => {
    const engine = await loadEngine();
    expect(engine.call("edgesfm_abi_version")).toBe(2);
    expect(await loadEngine()).toBe(engine);
  });

  it("knows COLMAP's camera models by name and parameter count", async () => {
    const engine = await loadEngine();
    expect(cameraModelId(engine, "OPENCV")).toBe(4);
    expect(validateCamera(engine, { model: "SIMPLE_RADIAL", width: 10, height: 10, params: [1, 2, 3, 4] })).toBe(2);
    expect(() => validateCamera(engine, { model: "PINHOLE", width: 10, height: 10, params: [1, 2, 3] })).toThrow(/takes 4 params/);
    expect(() => cameraModelId(engine, "FOV")).toThrow(/unknown camera model/);
  });

  it("moves arrays through the heap and frees them with their scope", async () => {
    const engine = await createEngine();
    const values = engine.withHeap((heap) => {
      const ptr = heap.f64([1.5, -2, 3e10]);
      return engine.readF64(ptr, 3);
    });
    expect(Array.from(values)).toEqual([1.5, -2, 3e10]);
  });
});
