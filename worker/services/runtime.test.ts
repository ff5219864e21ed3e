import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { cacheKeyOf, canonicalJson, hashJson, runtimeVersions, rvIdOf } from "./runtime";

describe("cache keys (3.2.1, 9.7)", () => {
  it("canonical JSON sorts keys at every level and drops nothing else", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: null, y: "s" }], c: true } })).toBe('{"a":{"c":true,"d":[3,{"y":"s","z":null}]},"b":1}');
    expect(hashJson({ x: 1, y: 2 })).toBe(hashJson({ y: 2, x: 1 }));
    expect(hashJson({ x: 1 })).toMatch(/^[0-9a-f]{64}$/);
  });

  it("the cache key is the SHA-256 of {kind, inputs_hash, params_hash, rv_id}: a changed runtime changes it", () => {
    const t = { kind: "extract", inputs_hash: "a".repeat(64), params_hash: "b".repeat(64), rv_id: rvIdOf({ "engine-wasm": "1" }) };
    expect(cacheKeyOf(t)).toBe(hashJson({ rv_id: t.rv_id, params_hash: t.params_hash, kind: "extract", inputs_hash: t.inputs_hash }));
    expect(cacheKeyOf({ ...t, rv_id: rvIdOf({ "engine-wasm": "2" }) })).not.toBe(cacheKeyOf(t));
  });

  it("the runtime-version map comes from SVC_RUNTIME_VERSIONS, 'unbuilt' when unset", () => {
    expect(runtimeVersions(env)).toEqual({ "engine-wasm": "unbuilt", shaders: "unbuilt" });
    expect(runtimeVersions({ ...env, SVC_RUNTIME_VERSIONS: '{"engine-wasm":"abc"}' } as Env)).toEqual({ "engine-wasm": "abc" });
    expect(() => runtimeVersions({ ...env, SVC_RUNTIME_VERSIONS: '{"x":1}' } as Env)).toThrow();
  });
});
