import { describe, expect, it } from "vitest";
import { decodeVladIndex, encodeVladIndex, nearestByCosine } from "./vlad";

const SHA = "a".repeat(64);

describe("VLAD index wire format (edgesfm.features.global.vlad.v1)", () => {
  it("round-trips the codebook, the images and every vector bit for bit; refuses truncated or foreign bytes", () => {
    const vectors = Float32Array.from({ length: 3 * 5 }, (_, i) => Math.sin(i) / 3);
    const index = {
      codebook: "vlad-rootsift-k32.v1",
      images: ["a.jpg", "b é.jpg", "c.jpg"].map((name) => ({ name, content_sha: SHA })),
      dim: 5,
      vectors,
    };
    const bytes = encodeVladIndex(index);
    expect(bytes.length % 4).toBe(0);
    expect(decodeVladIndex(bytes)).toEqual(index);
    expect(() => decodeVladIndex(bytes.subarray(0, bytes.length - 4))).toThrow(RangeError);
    expect(() => decodeVladIndex(new TextEncoder().encode('{"format":"x"}'.padEnd(40)))).toThrow(/magic/);
    expect(() => encodeVladIndex({ ...index, dim: 4 })).toThrow(RangeError);
  });

  it("nearest rows by max(0, 1 - cosine), excluded rows left out, ties in index order", () => {
    const s = Math.SQRT1_2;
    const vectors = Float32Array.from([1, 0, 0, 1, s, s, -1, 0, s, s]);
    const near = nearestByCosine(vectors, 2, Float32Array.from([1, 0]), 4, new Set([0]));
    expect(near.map((n) => n.index)).toEqual([2, 4, 1, 3]);
    expect(near[0]!.distance).toBeCloseTo(1 - s, 6);
    expect(near[2]!.distance).toBeCloseTo(1, 6);
    expect(near[3]!.distance).toBeCloseTo(2, 6);
  });
});
