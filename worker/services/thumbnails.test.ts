import decodeJpeg, { init as initJpegDecoder } from "@jsquash/jpeg/decode";
import JPEG_DECODER from "@jsquash/jpeg/codec/dec/mozjpeg_dec.wasm";
import encodePng, { init as initPng } from "@jsquash/png/encode";
// @ts-expect-error wasm-bindgen's .wasm.d.ts types the file as instance exports, not as the module wrangler imports
import PNG_CODEC from "@jsquash/png/codec/pkg/squoosh_png_bg.wasm";
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_TENANT } from "../context";
import {
  call,
  collectGarbage,
  expectFieldError,
  expectProblem,
  expectStatus,
  expireUploads,
  newDataset,
  uploadBlob,
} from "../test/helpers";
import { LUND_01, withOrientation } from "../test/photos";
import { orient } from "./decode";

async function register(bytes: Uint8Array, name = "img") {
  const sha = await uploadBlob(bytes);
  const { did } = await newDataset();
  const img = (await expectStatus(call("POST", `/v1/datasets/${did}/images`, { name, blob_sha: sha }), 201)).json;
  return { id: img.image_id as string, sha };
}

async function thumbnail(id: string, query = "", headers: Record<string, string> = {}) {
  const r = await call("GET", `/v1/images/${id}/thumbnail${query}`, undefined, headers);
  const bytes = r.status === 200 ? await r.res.arrayBuffer() : null;
  return { ...r, bytes, image: bytes ? await decodeJpeg(bytes) : null };
}

/** Mean absolute difference of two same-sized RGBA images, over RGB. */
function meanDiff(a: ImageData, b: ImageData): number {
  let sum = 0;
  for (let i = 0; i < a.data.length; i += 4) for (let c = 0; c < 3; c++) sum += Math.abs(a.data[i + c]! - b.data[i + c]!);
  return sum / ((a.data.length / 4) * 3);
}

describe("thumbnails (4.5 /thumbnail?size=N)", () => {
  let lund: { id: string; sha: string };
  beforeAll(async () => {
    await initJpegDecoder(JPEG_DECODER);
    await initPng(PNG_CODEC);
    lund = await register(LUND_01);
  });

  it("a real JPEG gives a JPEG whose longest side is N (256 by default), with a strong ETag and immutable caching", async () => {
    const r = await thumbnail(lund.id);
    expect(r.status).toBe(200);
    expect(r.headers.get("Content-Type")).toBe("image/jpeg");
    expect(r.headers.get("ETag")).toBe(`"${lund.sha}-t256-v1"`);
    expect(r.headers.get("Cache-Control")).toBe("public, max-age=31536000, immutable");
    expect([r.image!.width, r.image!.height]).toEqual([256, 192]);
    const small = await thumbnail(lund.id, "?size=16");
    expect([small.image!.width, small.image!.height]).toEqual([16, 12]);
    expect(small.headers.get("ETag")).toBe(`"${lund.sha}-t16-v1"`);
    // Never enlarged: the longest side is already 1024.
    const full = await thumbnail(lund.id, "?size=1024");
    expect([full.image!.width, full.image!.height]).toEqual([1024, 768]);
  });

  it("If-None-Match with its ETag answers 304", async () => {
    const r = await call("GET", `/v1/images/${lund.id}/thumbnail?size=64`, undefined, { "If-None-Match": `"${lund.sha}-t64-v1"` });
    expect(r.status).toBe(304);
  });

  it("size outside 16..1024 or not an integer answers 422", async () => {
    for (const q of ["?size=15", "?size=1025", "?size=abc", "?size=100.5"]) {
      expectFieldError(await call("GET", `/v1/images/${lund.id}/thumbnail${q}`), "query.size");
    }
  });

  it("is cached in R2 by (sha, size): the second request decodes nothing", async () => {
    const first = await thumbnail(lund.id, "?size=100");
    expect([first.image!.width, first.image!.height]).toEqual([100, 75]);
    const key = `t/${DEFAULT_TENANT}/blobs/${lund.sha}/thumbnails/v1-100.jpg`;
    expect((await env.BLOBS.head(key))?.size).toBe(first.bytes!.byteLength);
    // Replace the cached object: what comes back is that object, so nothing was decoded again.
    const marker = new TextEncoder().encode("cached thumbnail");
    await env.BLOBS.put(key, marker);
    const second = await call("GET", `/v1/images/${lund.id}/thumbnail?size=100`);
    expect(await second.res.text()).toBe("cached thumbnail");
    await env.BLOBS.delete(key);
  });

  it("applies the EXIF orientation: orientation 6 (rotate 90 degrees clockwise) gives the upright image", async () => {
    const rotated = await register(withOrientation(LUND_01, 6));
    const upright = (await thumbnail(rotated.id)).image!;
    expect([upright.width, upright.height]).toEqual([192, 256]);
    const plain = (await thumbnail(lund.id)).image!;
    // The plain thumbnail turned by hand matches (up to JPEG noise); unturned comparisons do not.
    expect(meanDiff(upright, orient(plain, 6))).toBeLessThan(4);
    expect(meanDiff(upright, orient(plain, 8))).toBeGreaterThan(15);
  });

  it("a PNG gives a JPEG thumbnail too", async () => {
    const pixels = new Uint8ClampedArray(40 * 30 * 4).map((_, i) => (i % 4 === 3 ? 255 : i % 4 === 0 ? 200 : 30));
    const png = new Uint8Array(await encodePng(new ImageData(pixels, 40, 30)));
    const { id } = await register(png, "red.png");
    expect((await call("GET", `/v1/images/${id}`)).json).toMatchObject({ media_type: "image/png", width: 40, height: 30 });
    const r = await thumbnail(id, "?size=20");
    expect([r.image!.width, r.image!.height]).toEqual([20, 15]);
    expect(r.image!.data[0]).toBeGreaterThan(180);
    expect(r.image!.data[1]).toBeLessThan(60);
  });

  it("formats other than JPEG and PNG, and bytes that are no image, answer 422", async () => {
    const gif = new Uint8Array([0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 10, 0, 10, 0, 0x80, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x3b]);
    const g = await register(gif, "a.gif");
    expectFieldError(await call("GET", `/v1/images/${g.id}/thumbnail`), "media_type", "unsupported_media_type");
    const t = await register(new TextEncoder().encode("plain text"), "a.txt");
    expectFieldError(await call("GET", `/v1/images/${t.id}/thumbnail`), "media_type", "unsupported_media_type");
  });

  it("an image too large to decode in a Worker answers 422 before any byte is read", async () => {
    // A PNG signature and an IHDR chunk announcing 10000 x 10000 pixels: the header is all that is needed.
    const ihdr = new Uint8Array([
      137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0x27, 0x10, 0, 0, 0x27, 0x10, 8, 6, 0, 0, 0, 0, 0, 0, 0,
    ]);
    const { id } = await register(ihdr, "huge.png");
    expect((await call("GET", `/v1/images/${id}`)).json).toMatchObject({ width: 10000, height: 10000, media_type: "image/png" });
    expectFieldError(await call("GET", `/v1/images/${id}/thumbnail`), "width", "image_too_large");
  });

  it("bytes declared image/jpeg that do not decode answer 422", async () => {
    const bytes = new TextEncoder().encode("this is no JPEG");
    const sha = await uploadBlob(bytes, {}, call, { contentType: "image/jpeg" });
    const { did } = await newDataset();
    const img = (await call("POST", `/v1/datasets/${did}/images`, { name: "fake.jpg", blob_sha: sha })).json;
    expect(img.media_type).toBe("image/jpeg");
    expectFieldError(await call("GET", `/v1/images/${img.image_id}/thumbnail`), "content_sha", "undecodable");
  });

  it("thumbnails go with the blob's bytes when its last reference goes", async () => {
    const bytes = withOrientation(LUND_01, 3);
    const { id, sha } = await register(bytes);
    await thumbnail(id, "?size=32");
    const prefix = `t/${DEFAULT_TENANT}/blobs/${sha}/`;
    expect((await env.BLOBS.list({ prefix })).objects).toHaveLength(1);
    await call("DELETE", `/v1/images/${id}`);
    await expireUploads("blob_sha = ?", sha);
    await collectGarbage();
    expect((await env.BLOBS.list({ prefix })).objects).toEqual([]);
    expect(await env.BLOBS.head(`t/${DEFAULT_TENANT}/blobs/${sha}`)).toBeNull();
    expectProblem(await call("GET", `/v1/images/${id}/thumbnail`), 404, "not_found");
  });
});

describe("orient (EXIF orientations 1-8)", () => {
  // A 3x2 image whose pixels are 1..6, row by row:  1 2 3 / 4 5 6
  const image = new ImageData(new Uint8ClampedArray(new Uint32Array([1, 2, 3, 4, 5, 6]).buffer), 3, 2);
  const pixels = (o: number) => {
    const r = orient(image, o);
    return { w: r.width, h: r.height, px: [...new Uint32Array(r.data.buffer)] };
  };
  it.each([
    [1, 3, 2, [1, 2, 3, 4, 5, 6]],
    [2, 3, 2, [3, 2, 1, 6, 5, 4]],
    [3, 3, 2, [6, 5, 4, 3, 2, 1]],
    [4, 3, 2, [4, 5, 6, 1, 2, 3]],
    [5, 2, 3, [1, 4, 2, 5, 3, 6]],
    [6, 2, 3, [4, 1, 5, 2, 6, 3]],
    [7, 2, 3, [6, 3, 5, 2, 4, 1]],
    [8, 2, 3, [3, 6, 2, 5, 1, 4]],
  ])("orientation %i", (o, w, h, px) => {
    expect(pixels(o)).toEqual({ w, h, px });
  });
});
