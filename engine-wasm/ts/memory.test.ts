// The engine's heap limit (issue 18, Memory): the module may grow its memory to what the build
// says (-sMAXIMUM_MEMORY in CMakeLists.txt, ENGINE_MAXIMUM_MEMORY_BYTES here), and addresses past
// 2 GiB, which wasm hands to JS as negative numbers, still move arrays and run a binding. Growing
// the heap reserves address space; only the pages written are backed by memory.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ENGINE_MAXIMUM_MEMORY_BYTES, createEngine, loadEngine, matchDescriptors } from "../index";

const WASM_PAGE = 64 * 1024;

/** An unsigned LEB128 at `at`: its value and the offset after it. */
function leb(bytes: Uint8Array, at: number): [number, number] {
  let value = 0;
  let shift = 0;
  for (;;) {
    const b = bytes[at++]!;
    value += (b & 0x7f) * 2 ** shift;
    shift += 7;
    if ((b & 0x80) === 0) return [value, at];
  }
}

/** The limits (pages) of the one memory a wasm module defines (section 5; spec 5.5.8). */
function definedMemoryLimits(wasm: Uint8Array): { min: number; max: number | null } {
  for (let at = 8; at < wasm.length;) {
    const id = wasm[at]!;
    const [size, body] = leb(wasm, at + 1);
    if (id === 5) {
      const [count, flagsAt] = leb(wasm, body);
      expect(count).toBe(1);
      const flags = wasm[flagsAt]!;
      const [min, next] = leb(wasm, flagsAt + 1);
      return { min, max: flags & 1 ? leb(wasm, next)[0] : null };
    }
    at = body + size;
  }
  throw new Error("the module defines no memory");
}

describe("engine memory", () => {
  it("grows up to ENGINE_MAXIMUM_MEMORY_BYTES (4 GiB), as CMakeLists.txt builds it", () => {
    const cmake = readFileSync(new URL("../CMakeLists.txt", import.meta.url), "utf8");
    expect(cmake).toContain("-sALLOW_MEMORY_GROWTH=1");
    expect(Number(/-sMAXIMUM_MEMORY=(\d+)/.exec(cmake)?.[1])).toBe(ENGINE_MAXIMUM_MEMORY_BYTES);
    const limits = definedMemoryLimits(readFileSync(new URL("../build/wasm/edgesfm-engine.wasm", import.meta.url)));
    expect(ENGINE_MAXIMUM_MEMORY_BYTES).toBe(4 * 1024 ** 3);
    expect(limits.max === null ? null : limits.max * WASM_PAGE).toBe(ENGINE_MAXIMUM_MEMORY_BYTES);
  });

  it("works at addresses past 2 GiB: arrays move and a binding answers as low in the heap", async () => {
    // SIFT-scaled random descriptors (norm about 512); B repeats 25 of A's.
    let state = 7;
    const descA = new Uint8Array(128 * 40).map(() => ((state = (state * 1664525 + 1013904223) >>> 0) >>> 24) % 90);
    const descB = new Uint8Array(descA.subarray(128 * 5, 128 * 30));
    const low = matchDescriptors(await loadEngine(), descA, descB);
    expect(low.length).toBeGreaterThan(0);

    const engine = await createEngine();
    const [address, values, high] = engine.withHeap((heap) => {
      // The heap now reaches past 2 GiB (sbrk takes a signed 32-bit increment: two blocks of 1 GiB).
      heap.alloc(1024 ** 3 + WASM_PAGE);
      heap.alloc(1024 ** 3 + WASM_PAGE);
      const ptr = heap.f64([1.5, -2, 3e10]);
      return [ptr, engine.readF64(ptr, 3), matchDescriptors(engine, descA, descB)] as const;
    });
    expect(engine.module.HEAPU8.length).toBeGreaterThan(2 ** 31);
    expect(address).toBeGreaterThan(2 ** 31);
    expect(Array.from(values)).toEqual([1.5, -2, 3e10]);
    expect(Array.from(high)).toEqual(Array.from(low));
  });
});
