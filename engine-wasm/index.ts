/**
 * @module EdgeSfM geometry engine (C++17/Eigen compiled to wasm): load it once with
 * `loadEngine()`, then call the typed wrappers. See engine-wasm/README.md.
 */
export * from "./ts/engine";
export * from "./ts/camera";
export * from "./ts/colmap-text";
export * from "./ts/feature";
export * from "./ts/two-view";
