import { readFileSync } from "node:fs";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { type DhashPixels, dhash, decodeDhashIndex, encodeDhashIndex, hamming, nearestByHamming } from "./dhash";

const LUND = "../shared/datasets/opensfm-lund/images";
const SACRE = "../shared/datasets/sacre-coeur/images";
const SCEAUX = "../shared/datasets/sceaux-castle/images";

async function pixels(input: Buffer | string, op: (s: sharp.Sharp) => sharp.Sharp = (s) => s): Promise<DhashPixels> {
  const { data, info } = await op(sharp(input)).raw().toBuffer({ resolveWithObject: true });
  return {
    data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    width: info.width,
    height: info.height,
    channels: info.channels as 1 | 2 | 3 | 4,
  };
}

describe("dHash (4.11 rule 1)", () => {
  it("pins the bits: left brighter than right sets the bit, rows most significant first", () => {
    // 9 columns getting darker to the right: every bit set; brighter: none.
    const ramp = (dir: 1 | -1) => ({
      data: Uint8Array.from({ length: 9 * 8 }, (_, i) => 128 - dir * 10 * ((i % 9) - 4)),
      width: 9,
      height: 8,
      channels: 1 as const,
    });
    expect(dhash(ramp(1))).toBe("ffffffffffffffff");
    expect(dhash(ramp(-1))).toBe("0000000000000000");
    expect(hamming("ffffffffffffffff", "0000000000000000")).toBe(64);
    expect(hamming("8000000000000001", "0000000000000000")).toBe(2);
    // Gray, gray+alpha, RGB and RGBA of the same picture hash alike; images smaller than the grid too.
    const gray = ramp(1);
    const rgba = { data: Uint8Array.from([...gray.data].flatMap((v) => [v, v, v, 255])), width: 9, height: 8, channels: 4 as const };
    expect(dhash(rgba)).toBe(dhash(gray));
    expect(dhash({ data: new Uint8Array([10, 200, 30, 40]), width: 2, height: 2, channels: 1 })).toMatch(/^[0-9a-f]{16}$/);
    expect(() => dhash({ data: new Uint8Array(5), width: 2, height: 2, channels: 1 })).toThrow(RangeError);
  });

  it("real photos: identical bytes 0 apart, a resized and recompressed copy a few bits apart, different photos far apart", async () => {
    const bytes = readFileSync(`${LUND}/01.jpg`);
    const original = dhash(await pixels(bytes));
    expect(dhash(await pixels(Buffer.from(bytes)))).toBe(original);
    // Half size, JPEG quality 60, then decoded again; and a PNG of a quarter-size copy.
    const small = await sharp(bytes).resize({ width: 512 }).jpeg({ quality: 60 }).toBuffer();
    const tiny = await sharp(bytes).resize({ width: 256 }).png().toBuffer();
    expect(hamming(original, dhash(await pixels(small)))).toBeLessThanOrEqual(4);
    expect(hamming(original, dhash(await pixels(tiny)))).toBeLessThanOrEqual(4);
    // Slightly brighter: dHash compares neighbours, so a global gain changes nothing or little.
    expect(hamming(original, dhash(await pixels(bytes, (s) => s.linear(1.1, 5))))).toBeLessThanOrEqual(4);
    // Photos of other places.
    for (const path of [`${SACRE}/03903474_1471484089.jpg`, `${SACRE}/02928139_3448003521.jpg`, `${SCEAUX}/100_7100.JPG`]) {
      expect(hamming(original, dhash(await pixels(path)))).toBeGreaterThanOrEqual(16);
    }
  });

  it("nearest neighbours: ascending by distance, ties in index order, the query left out; the index file round-trips", () => {
    const hashes = ["0000000000000000", "0000000000000003", "0000000000000001", "ffffffffffffffff", "0000000000000002"];
    expect(nearestByHamming(hashes, 0, 3)).toEqual([
      { index: 2, distance: 1 },
      { index: 4, distance: 1 },
      { index: 1, distance: 2 },
    ]);
    expect(nearestByHamming(hashes, 3, 10).map((n) => n.index)).toEqual([1, 2, 4, 0]);
    const images = [{ name: "a.jpg", content_sha: "a".repeat(64), dhash: hashes[1]! }];
    expect(decodeDhashIndex(encodeDhashIndex(images)).images).toEqual(images);
    expect(() => decodeDhashIndex(new TextEncoder().encode('{"format":"other"}'))).toThrow();
  });
});
