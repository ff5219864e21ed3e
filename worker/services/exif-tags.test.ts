/** The EXIF 35 mm-equivalent focal length read from an image's head at finalize (the runner's prior, 2.4). */
import { describe, expect, it } from "vitest";
import { LUND_01, SACRE_COEUR } from "../test/photos";
import { readFocalLength35mm } from "./exif-tags";

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
