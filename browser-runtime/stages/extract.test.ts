import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import { createEngine, type Engine } from "../../engine-wasm/ts/engine";
import { randomBlobs, renderTexture } from "../../engine-wasm/ts/testing/synthetic-texture";
import { DescriptorKind, decodeFeatures } from "../../protocol/wire/features";
import { decodeImage } from "../decode/node";
import { extractFeatures, siftOptionsFromSpec, toGray8, type DecodedImage } from "./extract";

let engine: Engine;
beforeAll(async () => {
  engine = await createEngine();
});

/** An RGB image whose three channels carry the same synthetic texture. */
function rgbTexture(width: number, height: number): DecodedImage {
  const gray = renderTexture(randomBlobs(width, height, 3), width, height);
  const data = new Uint8Array(width * height * 3);
  gray.forEach((v, i) => data.fill(Math.round(v * 255), 3 * i, 3 * i + 3));
  return { data, width, height, channels: 3 };
}

describe("extract stage", () => {
  it("converts RGB to gray with BT.709 weights rounded like FreeImage (COLMAP 3.8)", () => {
    const rgb: DecodedImage = { data: new Uint8Array([255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30]), width: 4, height: 1, channels: 3 };
    expect(Array.from(toGray8(rgb))).toEqual([54, 182, 18, 19]);
    expect(Array.from(toGray8(rgb, "rec601"))).toEqual([76, 150, 29, 18]);
    const rgba: DecodedImage = { data: new Uint8Array([255, 0, 0, 7, 0, 255, 0, 200]), width: 2, height: 1, channels: 4 };
    expect(Array.from(toGray8(rgba))).toEqual([54, 182]);
    expect(() => toGray8({ ...rgb, width: 5 })).toThrow(RangeError);
  });

  it("maps a FeaturesSpec, its legacy aliases and COLMAP-named backend options", () => {
    expect(siftOptionsFromSpec().maxNumFeatures).toBe(8192);
    expect(siftOptionsFromSpec({ max_num_features: 100 }).maxNumFeatures).toBe(100);
    expect(siftOptionsFromSpec({ sift_max_num_features: 50, sift_first_octave: 0 })).toMatchObject({ maxNumFeatures: 50, firstOctave: 0 });
    expect(siftOptionsFromSpec({ backend_options: { max_image_size: 640, normalization: "L2", upright: true } })).toMatchObject({
      maxImageSize: 640,
      normalization: "l2",
      upright: true,
    });
    expect(() => siftOptionsFromSpec({ type: "superpoint" })).toThrow(/not supported/);
  });

  it("produces a valid svc.features.local.v1 artifact in the original image frame", () => {
    const image = rgbTexture(200, 150);
    const result = extractFeatures(engine, image);
    const decoded = decodeFeatures(result.bytes);
    expect(decoded.imageWidth).toBe(200);
    expect(decoded.imageHeight).toBe(150);
    expect(decoded.descriptorKind).toBe(DescriptorKind.siftL1Root);
    expect(decoded.keypoints.length / 4).toBeGreaterThan(100);
    expect(decoded.keypoints).toEqual(result.features.keypoints);
    // Downscaled extraction still reports keypoints in the 200x150 frame.
    const small = decodeFeatures(extractFeatures(engine, image, { spec: { backend_options: { max_image_size: 100 } } }).bytes);
    let maxX = 0;
    for (let i = 0; i < small.keypoints.length; i += 4) maxX = Math.max(maxX, small.keypoints[i]!);
    expect(maxX).toBeGreaterThan(150);
    expect(small.keypoints.length).toBeLessThan(decoded.keypoints.length);
  });

  it("decodes with sharp and honours EXIF orientation only when asked", async () => {
    const { data, width, height } = rgbTexture(64, 32);
    const jpeg = await sharp(Buffer.from(data), { raw: { width, height, channels: 3 } })
      .jpeg({ quality: 95 })
      .withMetadata({ orientation: 6 }) // rotate 90 degrees clockwise to display
      .toBuffer();
    const asStored = await decodeImage(new Uint8Array(jpeg));
    expect([asStored.width, asStored.height, asStored.channels]).toEqual([64, 32, 3]);
    const oriented = await decodeImage(new Uint8Array(jpeg), { respectExifOrientation: true });
    expect([oriented.width, oriented.height]).toEqual([32, 64]);
  });
});
