import { describe, expect, it } from "vitest";
import { DescriptorKind, WireFormatError } from "./features";
import { type PointDescriptors, decodePointDescriptors, encodePointDescriptors } from "./point-descriptors";

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex");

const two: PointDescriptors = {
  ids: [3, 9],
  descriptorDim: 2,
  descriptorKind: DescriptorKind.siftL1Root,
  descriptors: new Uint8Array([7, 255, 0, 1]),
  numImages: 5,
  numImagesSkipped: 1,
};

describe("x-point_descriptors.bin", () => {
  it("pins the byte layout: 32-byte header, uint64 point ids, then uint8 descriptors", () => {
    expect(hex(encodePointDescriptors(two))).toBe(
      "53464d5044534300" + // magic SFMPDSC\0
        "01000000" + // version 1
        "02000000" + // count 2
        "02000000" + // descriptor_dim 2
        "01000000" + // descriptor_kind 1 (RootSIFT uint8)
        "05000000" + // num_images 5
        "01000000" + // num_images_skipped 1
        "0300000000000000" + // point 3
        "0900000000000000" + // point 9
        "07ff0001", // descriptors
    );
  });

  it("round-trips SIFT-sized descriptors, also from an offset view", () => {
    const n = 41;
    const p: PointDescriptors = {
      ids: Array.from({ length: n }, (_, i) => 2 * i + 1),
      descriptorDim: 128,
      descriptorKind: DescriptorKind.siftL2,
      descriptors: Uint8Array.from({ length: 128 * n }, (_, i) => (i * 13) % 256),
      numImages: 9,
      numImagesSkipped: 0,
    };
    const bytes = encodePointDescriptors(p);
    expect(bytes.length).toBe(32 + n * (8 + 128));
    const shifted = new Uint8Array(bytes.length + 3);
    shifted.set(bytes, 3);
    expect(decodePointDescriptors(shifted.subarray(3))).toEqual(p);
  });

  it("refuses a bad magic, version, size, kind or id order", () => {
    const bytes = encodePointDescriptors(two);
    const altered = (at: number, value: number, size = bytes.length) => {
      const b = bytes.slice(0, size);
      if (at < size) b[at] = value;
      return b;
    };
    expect(() => decodePointDescriptors(altered(0, 0x41))).toThrow(/magic/);
    expect(() => decodePointDescriptors(altered(8, 2))).toThrow(/version/);
    expect(() => decodePointDescriptors(altered(99, 0, bytes.length - 1))).toThrow(/layout needs/);
    expect(() => decodePointDescriptors(altered(20, 7))).toThrow(/descriptorKind/);
    expect(() => decodePointDescriptors(altered(40, 3))).toThrow(/ascending/);
    expect(() => decodePointDescriptors(bytes.slice(0, 10))).toThrow(WireFormatError);
    expect(() => encodePointDescriptors({ ...two, descriptors: new Uint8Array(3) })).toThrow(WireFormatError);
  });
});
