/** @module Binary wire formats of the core artifacts (spec 2.11); see protocol/README.md. */
export * from "./features";
export * from "./matches";
export * from "./point-descriptors";
export * from "./points";
export * from "./verified-matches";
