/**
 * @module The wire contract shared by worker, runner and site: resource schemas, capability
 * names, camera models, event kinds and binary formats. Imports nothing of theirs.
 */
export * from "./capabilities";
export * from "./camera-models";
export * from "./camera-projection";
export * from "./schemas/common";
export * from "./schemas/project";
export * from "./schemas/dataset";
export * from "./schemas/image";
export * from "./schemas/upload";
export * from "./schemas/meta";
export * from "./schemas/snapshot";
export * from "./schemas/specs";
export * from "./schemas/job";
export * from "./schemas/runner";
export * from "./schemas/reconstruction";
export * from "./schemas/geo";
export * from "./events";
export * from "./artifacts";
export * from "./exports";
export * from "./projection";
export * from "./similarity";
export * from "./backend";
export * from "./dataset-imports";
export * from "./hierarchical";
