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

  it("is null without EXIF GPS or for bytes that are no image", async () => {
    expect(await readGps(SACRE_COEUR)).toBeNull();
    expect(await readGps(new TextEncoder().encode("image 0 of a pair list"))).toBeNull();
    expect(await readGps(new Uint8Array())).toBeNull();
  });
});
