// Prepended to the emscripten ES module (--extern-pre-js). Emscripten 3.1.6's Node
// branch reads `__dirname` at start-up and `require` when it loads the .wasm itself;
// neither exists in an ES module. Browsers and workers never take that branch, so the
// shim only gives Node what it needs. Callers under Node pass {wasmBinary} (ts/engine.ts
// does), so `require` is only a fallback.
var __edgesfmIsNode = typeof process == "object" && typeof process.versions == "object" && typeof process.versions.node == "string";
var __dirname = __edgesfmIsNode ? decodeURIComponent(new URL(".", import.meta.url).pathname) : "";
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- read by the emscripten module this is prepended to
var require =
  __edgesfmIsNode && typeof process.getBuiltinModule == "function"
    ? process.getBuiltinModule
    : function (name) {
        throw new Error("edgesfm-engine: pass {wasmBinary} to the factory under Node (cannot require '" + name + "')");
      };
