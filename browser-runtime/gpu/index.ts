/**
 * @module The WebGPU path of the runner's SIFT, matching and projection stages: device
 * acquisition, the WGSL twins of engine-wasm's `extractSift`/`matchDescriptors`, and the
 * per-device choice between them. Kernels and bindings: shaders/README.md.
 */
export { acquireGpu, navigatorGpu, type GpuContext } from "./device";
export { loadShaderSources, type ShaderSources } from "./shader-sources";
export { SiftGpu, extractSiftGpu } from "./sift-gpu";
export { MatcherGpu, matchDescriptorsGpu } from "./match-gpu";
export { ProjectionGpu, projectorFor, selectProjector, wasmProjector, cubemapFaceView, type Projector } from "./projection-gpu";
export { selectSiftStages, stagesFor, type SiftPath, type SiftStages } from "./select";
