/**
 * @module Stands in for Node-only modules (Dawn's `webgpu`, `node:fs`, `node:os`, `node:path`) that
 * browser-runtime and the engine import behind "is this Node?" checks. Those branches never run in a
 * browser; the alias (site/vite.config.ts) keeps the Node code out of the page's bundle.
 */
export default {};
