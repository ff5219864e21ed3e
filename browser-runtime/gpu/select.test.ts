// Path selection: both implementations are measured on this device and the faster one is used;
// on the software adapter available here (SwiftShader) that is the WASM path.
import { describe, expect, it } from "vitest";
import { loadEngine } from "../../engine-wasm/ts/engine";
import { selectSiftStages } from "./select";
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
});
