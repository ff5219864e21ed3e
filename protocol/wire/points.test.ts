import { describe, expect, it } from "vitest";
import { WireFormatError } from "./features";
import { POINTS_HEADER_BYTES, POINT_RECORD_BYTES, decodePoints, decodePointsHeader, encodePoints } from "./points";

const cloud = () => ({
  xyz: new Float32Array([1, 2, 3, -1, 0.5, 4]),
  rgb: new Uint8Array([255, 0, 10, 1, 2, 3]),
  trackLength: new Uint16Array([3, 65535]),
  ids: new BigUint64Array([7n, 2n ** 40n]),
});

describe("points.bin (spec 2.14)", () => {
  it("pins the byte layout: 44-byte header, 26-byte records, little-endian", () => {
    const bytes = encodePoints(cloud());
    expect(bytes.byteLength).toBe(44 + 2 * 26);
    const hex = Buffer.from(bytes).toString("hex");
    // magic "SFMP3D\0\0", version 1, count 2
    expect(hex.slice(0, 40)).toBe("53464d5033440000" + "01000000" + "0200000000000000");
    // bbox_min (-1, 0.5, 3) and bbox_max (1, 2, 4) as float32 LE
    expect(hex.slice(40, 88)).toBe("000080bf" + "0000003f" + "00004040" + "0000803f" + "00000040" + "00008040");
    // first record: xyz (1,2,3), rgb, pad, track_len 3, id 7
    expect(hex.slice(88, 140)).toBe("0000803f" + "00000040" + "00004040" + "ff000a" + "00" + "0300" + "0700000000000000");
    // second record's id 2^40 at its last 8 bytes
    expect(hex.slice(140 + 36, 140 + 52)).toBe("0000000000010000");
  });

  it("round-trips and decodes a Range of whole records", () => {
    const bytes = encodePoints(cloud());
    const back = decodePoints(bytes);
    expect(back.count).toBe(2);
    expect([...back.ids]).toEqual([7n, 2n ** 40n]);
    expect([...back.trackLength]).toEqual([3, 65535]);
    const second = decodePoints(bytes.subarray(POINTS_HEADER_BYTES + POINT_RECORD_BYTES), true);
    expect([...second.xyz]).toEqual([-1, 0.5, 4]);
  });

  it("keeps a tile's cell bounds in the header", () => {
    const h = decodePointsHeader(encodePoints({ ...cloud(), bboxMin: [-10, -10, -10], bboxMax: [10, 10, 10] }));
    expect(h.bboxMin).toEqual([-10, -10, -10]);
    expect(h.bboxMax).toEqual([10, 10, 10]);
  });

  it("rejects unordered ids, wrong magic and truncated files", () => {
    expect(() => encodePoints({ ...cloud(), ids: new BigUint64Array([5n, 5n]) })).toThrow(WireFormatError);
    const bytes = encodePoints(cloud());
    expect(() => decodePoints(bytes.subarray(0, bytes.byteLength - 1))).toThrow(WireFormatError);
    const bad = bytes.slice();
    bad[0] = 0;
    expect(() => decodePointsHeader(bad)).toThrow(/SFMP3D/);
  });

  it("encodes an empty cloud", () => {
    const back = decodePoints(
      encodePoints({ xyz: new Float32Array(), rgb: new Uint8Array(), trackLength: new Uint16Array(), ids: new BigUint64Array() }),
    );
    expect(back.count).toBe(0);
  });
});
