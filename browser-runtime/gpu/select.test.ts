// Path selection: both implementations are measured on this device and the faster one is used;
// on the software adapter available here (SwiftShader) that is the WASM path.
import { describe, expect, it } from "vitest";
import { loadEngine } from "../../engine-wasm/ts/engine";
import { type SiftStages, selectSiftStages, stagesFor } from "./select";
import { type Projector, projectorFor } from "./projection-gpu";
import { loadShaderSources } from "./shader-sources";
import { syntheticImage } from "./synthetic-image";
import { testGpu } from "./test-support";

const gpu = await testGpu();

describe("selectSiftStages", () => {
  it("uses the WASM path when there is no GPU", async () => {
    const stages = await selectSiftStages(await loadEngine(), undefined);
    expect(stages.features).toBe("wasm");
    expect(stages.matching).toBe("wasm");
    const f = await stages.extract(syntheticImage(64, 48), 64, 48);
    expect(f.keypoints.length / 4).toBe(f.descriptors.length / 128);
  });

  it.skipIf("error" in gpu)("measures both paths and picks the faster for each stage", async () => {
    if ("error" in gpu) return;
    // A small workload: SwiftShader is slow, and the comparison is what is under test.
    const stages = await selectSiftStages(await loadEngine(), gpu, await loadShaderSources(), { width: 128, height: 96, descriptors: 256 });
    console.log("calibration on", stages.adapter, stages.timings, "->", stages.features, stages.matching);
    expect(stages.timings.gpuExtract).toBeGreaterThan(0);
    expect(stages.timings.gpuMatch).toBeGreaterThan(0);
    expect(stages.features).toBe(stages.timings.gpuExtract! < stages.timings.wasmExtract ? "webgpu" : "wasm");
    expect(stages.matching).toBe(stages.timings.gpuMatch! < stages.timings.wasmMatch ? "webgpu" : "wasm");
    if (gpu.isFallbackAdapter) expect(stages.features).toBe("wasm");
  });

  it("use_gpu: false runs a task on the WASM path even where the calibration chose WebGPU (2.12)", async () => {
    const called: string[] = [];
    const path = (name: string) => async () => {
      called.push(name);
      return { keypoints: new Float32Array(), descriptors: new Uint8Array() };
    };
    const cpu = { extract: path("wasm extract"), match: async () => (called.push("wasm match"), new Uint32Array()) };
    const chosen: SiftStages = {
      features: "webgpu",
      matching: "webgpu",
      timings: { wasmExtract: 10, gpuExtract: 1, wasmMatch: 10, gpuMatch: 1 },
      extract: path("gpu extract"),
      match: async () => (called.push("gpu match"), new Uint32Array()),
      cpu,
    };
    const image = new Uint8Array(4);
    const forced = stagesFor(chosen, false);
    expect([forced.features, forced.matching]).toEqual(["wasm", "wasm"]);
    await forced.extract(image, 2, 2);
    await forced.match(new Uint8Array(), new Uint8Array());
    expect(called).toEqual(["wasm extract", "wasm match"]);
    expect(stagesFor(chosen, true)).toBe(chosen);
    // The selected stages of this device carry their WASM path.
    const measured = await selectSiftStages(await loadEngine(), undefined);
    expect(stagesFor(measured, false).extract).toBe(measured.cpu.extract);

    const wasm = { path: "wasm" } as Projector;
    const gpuProjector = { path: "webgpu", wasm } as Projector;
    expect(projectorFor(gpuProjector, false)).toBe(wasm);
    expect(projectorFor(gpuProjector, true)).toBe(gpuProjector);
  });
});
