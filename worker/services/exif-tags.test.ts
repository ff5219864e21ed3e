/** The EXIF 35 mm-equivalent focal length read from an image's head at finalize (the runner's prior, 2.4). */
import { describe, expect, it } from "vitest";
import { LUND_01, SACRE_COEUR } from "../test/photos";
import { readFocalLength35mm, readGps } from "./exif-tags";

describe("EXIF FocalLengthIn35mmFormat", () => {
  it("is read from a real photo's head (Lund: 35)", async () => {
    expect(await readFocalLength35mm(LUND_01, 1024, 768)).toBe(35);
    // The APP1 segment is at most 64 KiB near the start: the head alone carries it.
    expect(await readFocalLength35mm(LUND_01.subarray(0, 64 * 1024), 1024, 768)).toBe(35);
  });

  it("is kept for a resized photo (its shape kept) and dropped for a cropped one that kept its original's EXIF", async () => {
    // Lund's EXIF says 1024 x 768 pixels.
    expect(await readFocalLength35mm(LUND_01, 512, 384)).toBe(35);
    expect(await readFocalLength35mm(LUND_01, 768, 1024)).toBe(35);
    // Whole-pixel rounding of a resize: 1000 x 750 of a 4000 x 3000 photo stored as 999 x 750.
    expect(await readFocalLength35mm(LUND_01, 999, 750)).toBe(35);
    expect(await readFocalLength35mm(LUND_01, 700, 768)).toBeNull();
    expect(await readFocalLength35mm(LUND_01, 1024, 576)).toBeNull();
    // Without EXIF pixel dimensions the shape cannot be checked: the focal length stands.
    const withoutDimensions = withExifTagsRenamed(LUND_01.subarray(0, 64 * 1024), [0xa002, 0xa003]);
    expect(await readFocalLength35mm(withoutDimensions, 700, 768)).toBe(35);
  });

  it("is null for a photo without EXIF, bytes that are no image, and an empty head", async () => {
    expect(await readFocalLength35mm(SACRE_COEUR, 1080, 695)).toBeNull();
    expect(await readFocalLength35mm(new TextEncoder().encode("image 0 of a pair list"), 1, 1)).toBeNull();
    expect(await readFocalLength35mm(new Uint8Array(), 1, 1)).toBeNull();
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

/** The TIFF structure of a copy of a JPEG head: the offset of an IFD entry, by the IFD0 pointer tag leading to its IFD. */
function exifEntries(head: Uint8Array) {
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
  /** The absolute offset of the entry of `tag` in the IFD that IFD0's `pointer` tag leads to. */
  const subEntry = (pointer: number, tag: number) => tiff + entry(u32(entry(u32(4), pointer) + 8), tag);
  return { out, view, le, subEntry };
}

/** A copy of a JPEG head whose EXIF GPS IFD entries of the tags given (1 GPSLatitudeRef, 3 GPSLongitudeRef: ASCII values held in the entry itself) hold the byte given as their first value byte. */
function withGpsRefs(head: Uint8Array, refs: Record<number, number>): Uint8Array {
  const { out, subEntry } = exifEntries(head);
  for (const [tag, value] of Object.entries(refs)) out[subEntry(0x8825, Number(tag)) + 8] = value;
  return out;
}

/** A copy of a JPEG head whose Exif IFD entries of these tags (0xa002 PixelXDimension, 0xa003 PixelYDimension) carry an unknown tag number instead. */
function withExifTagsRenamed(head: Uint8Array, tags: number[]): Uint8Array {
  const { out, view, le, subEntry } = exifEntries(head);
  tags.forEach((tag, k) => view.setUint16(subEntry(0x8769, tag), 0xc000 + k, le));
  return out;
}
