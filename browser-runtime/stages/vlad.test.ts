import { describe, expect, it } from "vitest";
import { DescriptorKind } from "../../protocol/wire/features";
import { VLAD_DIM } from "../../protocol/wire/vlad";
import { rootSift, vlad } from "./vlad";
import { DEFAULT_CODEBOOK } from "./vocab";

/** n pseudo-random SIFT-like uint8 descriptors (seeded). */
function descriptors(n: number, seed: number): Uint8Array {
  let a = seed;
  return Uint8Array.from({ length: n * 128 }, () => {
    a = (Math.imul(a, 1664525) + 1013904223) >>> 0;
    return a >>> 26 === 0 ? (a >>> 8) % 256 : (a >>> 8) % 24;
  });
}

const norm = (v: Float32Array, from = 0, to = v.length) => Math.hypot(...v.subarray(from, to));

describe("VLAD (RootSIFT, 32-word codebook, intra-normalised)", () => {
  it("ships a 32 x 128 codebook: the spec's 4096 dimensions", () => {
    expect(DEFAULT_CODEBOOK).toMatchObject({ id: "vlad-rootsift-k32.v1", words: 32, dim: 128 });
    expect(DEFAULT_CODEBOOK.words * DEFAULT_CODEBOOK.dim).toBe(VLAD_DIM);
    expect(DEFAULT_CODEBOOK.centroids.every(Number.isFinite)).toBe(true);
  });

  it("RootSIFT: L2 descriptors are L1-normalised and square-rooted, L1-root ones only rescaled, both to unit length", () => {
    const d = Uint8Array.from({ length: 128 }, (_, i) => (i < 4 ? [9, 16, 0, 0][i]! : 0));
    const l2 = rootSift({ descriptors: d, descriptorDim: 128, descriptorKind: DescriptorKind.siftL2 });
    expect(l2[0]).toBeCloseTo(3 / 5, 6);
    expect(l2[1]).toBeCloseTo(4 / 5, 6);
    const l1root = rootSift({ descriptors: d, descriptorDim: 128, descriptorKind: DescriptorKind.siftL1Root });
    expect(l1root[0]).toBeCloseTo(9 / Math.hypot(9, 16), 6);
    expect(norm(l1root)).toBeCloseTo(1, 6);
  });

  it("is unit length with each visited word's block of equal length, deterministic, closer for shared descriptors", () => {
    const a = descriptors(500, 1);
    const f = (descriptors: Uint8Array) => ({ descriptors, descriptorDim: 128, descriptorKind: DescriptorKind.siftL1Root }) as const;
    const v = vlad(f(a), DEFAULT_CODEBOOK);
    expect(v.length).toBe(VLAD_DIM);
    expect(norm(v)).toBeCloseTo(1, 5);
    const blocks = Array.from({ length: 32 }, (_, w) => norm(v, w * 128, (w + 1) * 128)).filter((x) => x > 0);
    for (const b of blocks) expect(b).toBeCloseTo(1 / Math.sqrt(blocks.length), 5);
    expect(vlad(f(a), DEFAULT_CODEBOOK)).toEqual(v);
    const dot = (x: Float32Array, y: Float32Array) => x.reduce((s, xi, i) => s + xi * y[i]!, 0);
    const half = Uint8Array.from([...a.subarray(0, 250 * 128), ...descriptors(250, 2)]);
    expect(dot(v, vlad(f(half), DEFAULT_CODEBOOK))).toBeGreaterThan(dot(v, vlad(f(descriptors(500, 3)), DEFAULT_CODEBOOK)));
    expect(norm(vlad(f(new Uint8Array(0)), DEFAULT_CODEBOOK))).toBe(0);
    expect(() => vlad({ descriptors: new Uint8Array(64), descriptorDim: 64, descriptorKind: 0 }, DEFAULT_CODEBOOK)).toThrow(RangeError);
  });
});
