import { describe, expect, it } from "vitest";
import { WireFormatError } from "./features";
import { decodeMatches, encodeMatches, validateMatches, type PairMatches } from "./matches";

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex");

describe("svc.matches.indexed.v1", () => {
  it("pins the byte layout: header, then per pair counts, names, ids, padding and uint32 index pairs", () => {
    const bytes = encodeMatches([{ imageName1: "a.jp", imageName2: "b", imageId1: "i1", matches: new Uint32Array([3, 4]) }]);
    expect(hex(bytes)).toBe(
      "53464d4d54434800" + // magic SFMMTCH\0
        "01000000" + // version 1
        "01000000" + // num_pairs 1
        "01000000" + // num_matches 1
        "0400" +
        "0100" +
        "0200" +
        "0000" + // name1_len 4, name2_len 1, id1_len 2, id2_len 0
        "612e6a70" +
        "62" +
        "6931" + // "a.jp" "b" "i1"
        "00" + // padding: record header 12 + strings 7 = 19 -> 20
        "03000000" +
        "04000000", // (3, 4)
    );
    expect(bytes.length % 4).toBe(0);
  });

  it("round-trips several pairs, empty pairs and non-ASCII names", () => {
    const pairs: PairMatches[] = [
      { imageName1: "x/é.jpg", imageName2: "y.png", imageId1: "01J", imageId2: "01K", matches: new Uint32Array([0, 1, 2, 3, 4, 5]) },
      { imageName1: "y.png", imageName2: "z.png", matches: new Uint32Array(0) },
      { imageName1: "abc", imageName2: "d", matches: Uint32Array.from({ length: 2000 }, (_, i) => i * 3) },
    ];
    const back = decodeMatches(encodeMatches(pairs));
    expect(back).toEqual(pairs);
    expect(decodeMatches(encodeMatches([]))).toEqual([]);
  });

  it("rejects truncation, trailing bytes, bad magic, empty names and out-of-range indices", () => {
    const bytes = encodeMatches([{ imageName1: "a", imageName2: "b", matches: new Uint32Array([0, 9]) }]);
    expect(() => decodeMatches(bytes.subarray(0, bytes.length - 4))).toThrow(/beyond the end/);
    const longer = new Uint8Array(bytes.length + 4);
    longer.set(bytes);
    expect(() => decodeMatches(longer)).toThrow(/trailing/);
    const bad = bytes.slice();
    bad[3] = 0;
    expect(() => decodeMatches(bad)).toThrow(WireFormatError);
    expect(() => encodeMatches([{ imageName1: "", imageName2: "b", matches: new Uint32Array(0) }])).toThrow(/empty/);
    expect(() => encodeMatches([{ imageName1: "a", imageName2: "b", matches: new Uint32Array(3) }])).toThrow(/pairs/);
    expect(
      validateMatches(
        bytes,
        new Map([
          ["a", 1],
          ["b", 10],
        ]),
      ),
    ).toBe(1);
    expect(() =>
      validateMatches(
        bytes,
        new Map([
          ["a", 1],
          ["b", 9],
        ]),
      ),
    ).toThrow(/out of range/);
  });
});
