/** The EXIF 35 mm-equivalent focal length read from an image's head at finalize (the runner's prior, 2.4). */
import { describe, expect, it } from "vitest";
import { LUND_01, SACRE_COEUR } from "../test/photos";
import { readFocalLength35mm, readGps } from "./exif-tags";

describe("EXIF FocalLengthIn35mmFormat", () => {
  it("is read from a real photo's head (Lund: 35)", async () => {
    expect(await readFocalLength35mm(LUND_01)).toBe(35);
    // The APP1 segment is at most 64 KiB near the start: the head alone carries it.
    expect(await readFocalLength35mm(LUND_01.subarray(0, 64 * 1024))).toBe(35);
  });

  it("is null for a photo without EXIF, bytes that are no image, and an empty head", async () => {
    expect(await readFocalLength35mm(SACRE_COEUR)).toBeNull();
    expect(await readFocalLength35mm(new TextEncoder().encode("image 0 of a pair list"))).toBeNull();
    expect(await readFocalLength35mm(new Uint8Array())).toBeNull();
  });
});

describe("EXIF GPS", () => {
  it("is read from a real photo's head with the hemisphere references applied (Lund: 55.698 N, 13.195 E, 37 m)", async () => {
    const gps = await readGps(LUND_01.subarray(0, 64 * 1024));
    expect(gps).toEqual({
      latitude: expect.closeTo(55 + 41 / 60 + 53.4 / 3600, 12),
      longitude: expect.closeTo(13 + 11 / 60 + 43.4 / 3600, 12),
      altitude: 37,
      horizontal_accuracy_m: null,
    });
  });

  it("applies southern and western references (Lund's own GPS block with its refs turned to S and W)", async () => {
    const gps = await readGps(withGpsRefs(LUND_01.subarray(0, 64 * 1024), { 1: 0x53, 3: 0x57 }));
    expect(gps).toEqual({
      latitude: expect.closeTo(-(55 + 41 / 60 + 53.4 / 3600), 12),
      longitude: expect.closeTo(-(13 + 11 / 60 + 43.4 / 3600), 12),
      altitude: 37,
      horizontal_accuracy_m: null,
    });
  });

  it("is null without EXIF GPS or for bytes that are no image", async () => {
    expect(await readGps(SACRE_COEUR)).toBeNull();
    expect(await readGps(new TextEncoder().encode("image 0 of a pair list"))).toBeNull();
    expect(await readGps(new Uint8Array())).toBeNull();
  });
});

/**
 * A copy of a JPEG head whose EXIF GPS IFD entries of the tags given (1 GPSLatitudeRef, 3 GPSLongitudeRef: ASCII values held
 * in the entry itself) hold the byte given as their first value byte.
 */
function withGpsRefs(head: Uint8Array, refs: Record<number, number>): Uint8Array {
  const out = head.slice();
  const view = new DataView(out.buffer);
  // The APP1 segment: "Exif\0\0", then the TIFF header (byte order, 42, offset of IFD0).
  let at = 2;
  while (view.getUint16(at) !== 0xffe1) at += 2 + view.getUint16(at + 2);
  const tiff = at + 10;
  const le = view.getUint16(tiff) === 0x4949;
  const u16 = (o: number) => view.getUint16(tiff + o, le);
  const u32 = (o: number) => view.getUint32(tiff + o, le);
  const entry = (ifd: number, tag: number) => {
    for (let i = 0; i < u16(ifd); i++) if (u16(ifd + 2 + 12 * i) === tag) return ifd + 2 + 12 * i;
    throw new Error(`no tag ${tag} in the IFD at ${ifd}`);
  };
  const gpsIfd = u32(entry(u32(4), 0x8825) + 8);
  for (const [tag, value] of Object.entries(refs)) out[tiff + entry(gpsIfd, Number(tag)) + 8] = value;
  return out;
}
