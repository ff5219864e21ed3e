/**
 * The two engine modules (engine-wasm/README.md "Two modules"): the threaded one is the plain
 * one's objects linked with shared memory and pthreads. It runs in cross-origin isolated
 * browsers only (test/e2e/wasm-threads.test.ts loads it in Chromium and maps with it); here, in
 * Node, its build is checked and refused with the reason, and the plain module runs serially.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ENGINE_MAXIMUM_MEMORY_BYTES, createEngine, loadEngine } from "./engine";

const file = (name: string) => readFileSync(new URL(`../build/wasm/${name}`, import.meta.url));

describe("the threaded engine module", () => {
  it("has the plain module's bindings on shared memory as large as the plain one's", async () => {
    const [plain, threaded] = await Promise.all([
      WebAssembly.compile(file("edgesfm-engine.wasm")),
      WebAssembly.compile(file("edgesfm-engine-mt.wasm")),
    ]);
    const glue = file("edgesfm-engine-mt.mjs").toString("utf8");
    // The glue's names of the bindings (the .wasm's own are minified).
    const bindings = (text: string) => [...new Set(text.match(/_edgesfm_[a-z0-9_]+/g))].sort();
    expect(bindings(glue)).toEqual(bindings(file("edgesfm-engine.mjs").toString("utf8")));
    expect(bindings(glue)).toContain("_edgesfm_parallel_threads");
    // The threaded module's memory comes from its glue (shared, so that every pthread worker gets it), with the plain one's maximum.
    const importedMemories = (m: WebAssembly.Module) => WebAssembly.Module.imports(m).filter((i) => i.kind === "memory");
    expect(importedMemories(plain)).toHaveLength(0);
    expect(importedMemories(threaded)).toHaveLength(1);
    expect(glue).toContain(`"maximum":${ENGINE_MAXIMUM_MEMORY_BYTES}/65536,"shared":true`);
    expect(file("edgesfm-engine-mt.worker.js").toString("utf8")).toContain("import(");
  });

  it("is refused under Node with the reason", async () => {
    await expect(createEngine({ threads: true })).rejects.toThrow(/browsers only/);
  });

  it("leaves the plain module on one thread", async () => {
    const engine = await loadEngine();
    expect(engine.threads).toBe(1);
  });
});
