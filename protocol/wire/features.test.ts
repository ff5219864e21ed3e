import { describe, expect, it } from "vitest";
import { DescriptorKind, decodeFeatures, encodeFeatures, validateFeatures, WireFormatError, type LocalFeatures } from "./features";

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex");

const one: LocalFeatures = {
  imageWidth: 4,
  imageHeight: 3,
  descriptorDim: 2,
  descriptorKind: DescriptorKind.siftL1Root,
  keypoints: new Float32Array([1.5, 2.5, 1, 0]),
  descriptors: new Uint8Array([7, 255]),
};

describe("svc.features.local.v1", () => {
  it("pins the byte layout: 32-byte header, float32 keypoints, then uint8 descriptors", () => {
    expect(hex(encodeFeatures(one))).toBe(
      "53464d4645415400" + // magic SFMFEAT\0
        "01000000" + // version 1
        "01000000" + // count 1
        "02000000" + // descriptor_dim 2
        "04000000" + // image_width 4
        "03000000" + // image_height 3
        "01000000" + // descriptor_kind 1 (RootSIFT uint8)
        "0000c03f" + // x 1.5
        "00002040" + // y 2.5
        "0000803f" + // scale 1
        "00000000" + // orientation 0
        "07ff", // descriptor
    );
  });

  it("round-trips SIFT-sized features, also from an offset view", () => {
    const n = 37;
    const f: LocalFeatures = {
      imageWidth: 1024,
      imageHeight: 768,
      descriptorDim: 128,
      descriptorKind: DescriptorKind.siftL2,
      keypoints: Float32Array.from({ length: 4 * n }, (_, i) => i * 0.25 - 3),
      descriptors: Uint8Array.from({ length: 128 * n }, (_, i) => (i * 7) % 256),
    };
    const bytes = encodeFeatures(f);
    expect(bytes.length).toBe(32 + n * (16 + 128));
    const shifted = new Uint8Array(bytes.length + 5);
    shifted.set(bytes, 5);
    const back = decodeFeatures(shifted.subarray(5));
    expect(back).toEqual(f);
  });

  it("encodes an image without features as a bare header", () => {
    const bytes = encodeFeatures({ ...one, keypoints: new Float32Array(0), descriptors: new Uint8Array(0) });
    expect(bytes.length).toBe(32);
    expect(validateFeatures(bytes).count).toBe(0);
  });

  it("rejects bad magic, versions, sizes, kinds and non-finite keypoints", () => {
    const good = encodeFeatures(one);
    const mutate = (at: number, value: number): Uint8Array => {
      const b = good.slice();
      b[at] = value;
      return b;
    };
    expect(() => validateFeatures(mutate(0, 0x58))).toThrow(WireFormatError);
    expect(() => validateFeatures(mutate(8, 2))).toThrow(/version/);
    expect(() => validateFeatures(mutate(28, 9))).toThrow(/descriptor_kind/);
    expect(() => validateFeatures(good.subarray(0, good.length - 1))).toThrow(/layout needs/);
    expect(() => validateFeatures(good.subarray(0, 10))).toThrow(/header/);
    const nan = good.slice();
    new DataView(nan.buffer).setFloat32(32, Number.NaN, true);
    expect(() => validateFeatures(nan)).toThrow(/non-finite/);
    expect(() => encodeFeatures({ ...one, descriptors: new Uint8Array(3) })).toThrow(WireFormatError);
    expect(() => encodeFeatures({ ...one, imageWidth: -1 })).toThrow(WireFormatError);
  });
});
