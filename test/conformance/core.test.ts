/**
 * HTTP conformance of the Core surface (spec 1.1), over real HTTP, the way a client sees it:
 * errors (7), CORS (4), pagination (2.0), uploads (4.3), datasets (4.4), images and their bytes
 * (4.5) with the caching rules of section 4.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Server, startServer } from "./server";

const PHOTO = readFileSync(new URL("../../../shared/datasets/opensfm-lund/images/01.jpg", import.meta.url));
const sha256 = (b: Uint8Array | string) => createHash("sha256").update(b).digest("hex");
const ABSENT = "01ARZ3NDEKTSV4RRFFQ69G5FAV";

let server: Server;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server?.stop();
});

async function http(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body instanceof Uint8Array || typeof body === "string") init.body = body as BodyInit;
  else if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)["Content-Type"] = "application/json";
  }
  const res = await fetch(`${server.base}${path}`, init);
  const type = res.headers.get("Content-Type") ?? "";
  const raw = new Uint8Array(await res.arrayBuffer());
  const json = /json/.test(type) && raw.length > 0 ? JSON.parse(new TextDecoder().decode(raw)) : undefined;
  return { status: res.status, headers: res.headers, json, raw };
}

/** A problem+json body (7): type `{errors_base}/<slug>`, title, status, detail, instance = the path. */
function expectProblem(r: Awaited<ReturnType<typeof http>>, status: number, path: string) {
  expect(r.status).toBe(status);
  expect(r.headers.get("Content-Type")).toMatch(/^application\/problem\+json/);
  expect(r.json).toMatchObject({ status, instance: path, title: expect.any(String), detail: expect.any(String) });
  expect(r.json.type).toMatch(/^https?:\/\/.+\/[a-z_]+$/);
}

describe("errors (7)", () => {
  it("an unknown route answers 404 problem+json", async () => {
    expectProblem(await http("GET", "/v1/no-such-thing"), 404, "/v1/no-such-thing");
  });

  it("a wrong method answers 405 problem+json with Allow", async () => {
    const r = await http("PUT", "/v1/projects");
    expectProblem(r, 405, "/v1/projects");
    expect(r.headers.get("Allow")).toContain("POST");
  });

  it("an unparsable JSON body answers 400 problem+json", async () => {
    expectProblem(await http("POST", "/v1/projects", "{oops", { "Content-Type": "application/json" }), 400, "/v1/projects");
  });

  it("a body of the wrong types answers 422 with a typed errors[] (path, message, code)", async () => {
    const r = await http("POST", "/v1/projects", { name: 12 });
    expectProblem(r, 422, "/v1/projects");
    expect(r.json.errors).toContainEqual({ path: "name", message: expect.any(String), code: expect.any(String) });
  });

  it("an absent resource answers 404 problem+json", async () => {
    expectProblem(await http("GET", `/v1/projects/${ABSENT}`), 404, `/v1/projects/${ABSENT}`);
    expectProblem(await http("GET", `/v1/uploads/${ABSENT}`), 404, `/v1/uploads/${ABSENT}`);
  });

  it("odd input never answers 500", async () => {
    const odd: [string, string, unknown?, Record<string, string>?][] = [
      ["GET", "/v1/projects?page_size=-1"],
      ["GET", "/v1/projects?page_token=%FF%FE"],
      ["GET", "/v1/projects/%2e%2e%2f%2e%2e"],
      ["POST", "/v1/projects", "null", { "Content-Type": "application/json" }],
      ["POST", "/v1/projects", "[]", { "Content-Type": "application/json" }],
      ["POST", "/v1/uploads", { expected_size: 1e300 }],
      ["PATCH", `/v1/uploads/${ABSENT}`, "xx", { "Content-Range": "bytes 99999999999999999-1/2" }],
      ["GET", `/v1/images/${ABSENT}/thumbnail?size=1e9`],
      ["DELETE", `/v1/datasets/${ABSENT}/images/%00`],
    ];
    for (const [method, path, body, headers] of odd) {
      const r = await http(method, path, body, headers);
      expect(r.status, `${method} ${path}`).toBeGreaterThanOrEqual(400);
      expect(r.status, `${method} ${path}`).toBeLessThan(500);
      expect(r.headers.get("Content-Type")).toMatch(/^application\/problem\+json/);
    }
  });
});

describe("web rules (4)", () => {
  it("CORS preflight is answered and responses expose ETag, Last-Modified, Content-Range, Location, Link", async () => {
    const pre = await http("OPTIONS", "/v1/projects", undefined, {
      Origin: "https://client.example",
      "Access-Control-Request-Method": "POST",
      "Access-Control-Request-Headers": "content-type, idempotency-key",
    });
    // Any ok status passes a browser's preflight (Fetch standard); this server answers 200.
    expect([200, 204]).toContain(pre.status);
    expect(pre.headers.get("Access-Control-Allow-Methods")).toContain("POST");
    expect(pre.headers.get("Access-Control-Allow-Headers")?.toLowerCase()).toContain("idempotency-key");
    const r = await http("GET", "/v1/projects", undefined, { Origin: "https://client.example" });
    expect(r.headers.get("Access-Control-Allow-Origin")).toBeTruthy();
    for (const h of ["ETag", "Last-Modified", "Content-Range", "Location", "Link"])
      expect(r.headers.get("Access-Control-Expose-Headers")).toContain(h);
    const err = await http("GET", "/v1/no-such-thing", undefined, { Origin: "https://client.example" });
    expect(err.headers.get("Access-Control-Allow-Origin")).toBeTruthy();
  });

  it("auth mode none says so in X-EdgeSfM-Auth", async () => {
    expect((await http("GET", "/healthz")).headers.get("X-EdgeSfM-Auth")).toBe("none");
  });
});

describe("health and meta (4.1)", () => {
  it("healthz, readyz, version, spec, openapi.json and capabilities answer", async () => {
    expect((await http("GET", "/healthz")).json).toEqual({ status: "ok" });
    expect((await http("GET", "/readyz")).json.status).toBe("ok");
    expect((await http("GET", "/version")).json.service).toEqual(expect.any(String));
    expect((await http("GET", "/spec")).json.spec_version).toBe("v1.0-draft");
    expect((await http("GET", "/openapi.json")).json.openapi).toBe("3.1.0");
    const caps = (await http("GET", "/v1/capabilities")).json;
    for (const c of ["projects.crud", "datasets.crud", "images.crud", "uploads.chunked", "jobs.read", "events.sse", "spec.read"])
      expect(caps.features[c]).toBe(true);
  });

  it("openapi.json validates as OpenAPI 3.1 with a standard validator, every $ref resolving", async () => {
    const doc = (await http("GET", "/openapi.json")).json;
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? [], JSON.stringify(result.errors?.slice(0, 5))).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toMatch(/^3\.1/);
    expect(() => validator.resolveRefs()).not.toThrow();
  });
});

describe("pagination (2.0)", () => {
  it("walking next_page_token visits every project exactly once, and null ends the walk", async () => {
    const made = new Set<string>();
    for (let i = 0; i < 5; i++) made.add((await http("POST", "/v1/projects", { name: `walk ${i}` })).json.project_id);
    const seen: string[] = [];
    let token: string | null = null;
    let pages = 0;
    do {
      const q: string = token ? `&page_token=${encodeURIComponent(token)}` : "";
      const page = (await http("GET", `/v1/projects?page_size=2${q}`)).json;
      expect(page).toHaveProperty("total");
      seen.push(...page.items.map((p: { project_id: string }) => p.project_id));
      token = page.next_page_token;
      pages++;
    } while (token && pages < 100);
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of made) expect(seen).toContain(id);
  });
});

describe("upload -> dataset -> image -> bytes (4.3, 4.4, 4.5)", () => {
  let imageId: string;
  const photoSha = sha256(PHOTO);

  it("a photo uploaded in two chunks, resumed via GET and finalized with X-Content-SHA256 gets blob_sha", async () => {
    const up = await http(
      "POST",
      "/v1/uploads",
      { expected_size: PHOTO.length, content_type: "image/jpeg" },
      { "Idempotency-Key": `conf-${photoSha}` },
    );
    expect(up.status).toBe(201);
    expect(up.json.state).toBe("open");
    const uid = up.json.upload_id;
    const half = Math.floor(PHOTO.length / 2);
    const first = await http("PATCH", `/v1/uploads/${uid}`, PHOTO.subarray(0, half), {
      "Content-Range": `bytes 0-${half - 1}/${PHOTO.length}`,
    });
    expect(first.json.received_bytes).toBe(half);
    const resumed = (await http("GET", `/v1/uploads/${uid}`)).json;
    const rest = PHOTO.subarray(resumed.received_bytes);
    const second = await http("PATCH", `/v1/uploads/${uid}`, rest, {
      "Content-Range": `bytes ${resumed.received_bytes}-${PHOTO.length - 1}/${PHOTO.length}`,
    });
    expect(second.json.state).toBe("received");
    const fin = await http("POST", `/v1/uploads/${uid}:finalize`, undefined, { "X-Content-SHA256": photoSha });
    expect(fin.status).toBe(200);
    expect(fin.json).toMatchObject({ state: "finalized", blob_sha: photoSha });
    // A finalized upload is immutable: strong ETag, and If-None-Match answers 304.
    const etag = (await http("GET", `/v1/uploads/${uid}`)).headers.get("ETag");
    expect(etag).toMatch(/^"[^"]+"$/);
    expect((await http("GET", `/v1/uploads/${uid}`, undefined, { "If-None-Match": etag! })).status).toBe(304);
  });

  it("a PATCH with a malformed Content-Range, or a body length unequal to the range, answers 422", async () => {
    const uid = (await http("POST", "/v1/uploads", { expected_size: 4 })).json.upload_id;
    expectProblem(await http("PATCH", `/v1/uploads/${uid}`, "abcd", { "Content-Range": "bytes 0-3" }), 422, `/v1/uploads/${uid}`);
    expectProblem(await http("PATCH", `/v1/uploads/${uid}`, "abc", { "Content-Range": "bytes 0-3/4" }), 422, `/v1/uploads/${uid}`);
  });

  it("a dataset whose upload source names the photo registers it, with width and height read from the JPEG header", async () => {
    const pid = (await http("POST", "/v1/projects", { name: "lund" })).json.project_id;
    const ds = await http("POST", `/v1/projects/${pid}/datasets`, {
      name: "street",
      source: { kind: "upload", entries: [{ name: "01.jpg", blob_sha: photoSha }] },
      camera_model: "SIMPLE_RADIAL",
      intrinsics_mode: "single_camera",
      is_spherical: false,
      rig_config: null,
      respect_exif_orientation: true,
    });
    expect(ds.status).toBe(201);
    expect(ds.json.manifest_hash).toBe(sha256(`01.jpg\t${photoSha}\n`));
    const images = (await http("GET", ds.json._links.images.href)).json;
    expect(images.items[0]).toMatchObject({ name: "01.jpg", content_sha: photoSha, width: 1024, height: 768, byte_size: PHOTO.length });
    imageId = images.items[0].image_id;
  });

  it("image bytes carry a strong ETag; If-None-Match answers 304; Range answers 206", async () => {
    const full = await http("GET", `/v1/images/${imageId}/bytes`);
    expect(full.status).toBe(200);
    expect(sha256(full.raw)).toBe(photoSha);
    const etag = full.headers.get("ETag")!;
    expect(etag).toMatch(/^"[^"]+"$/);
    expect((await http("GET", `/v1/images/${imageId}/bytes`, undefined, { "If-None-Match": etag })).status).toBe(304);
    const part = await http("GET", `/v1/images/${imageId}/bytes`, undefined, { Range: "bytes=100-199" });
    expect(part.status).toBe(206);
    expect(part.headers.get("Content-Range")).toBe(`bytes 100-199/${PHOTO.length}`);
    expect(Buffer.from(part.raw).equals(PHOTO.subarray(100, 200))).toBe(true);
  });

  it("the thumbnail is a JPEG with Cache-Control, and exif answers the photo's tags", async () => {
    const t = await http("GET", `/v1/images/${imageId}/thumbnail?size=64`);
    expect(t.status).toBe(200);
    expect(t.headers.get("Content-Type")).toBe("image/jpeg");
    expect(t.headers.get("Cache-Control")).toContain("max-age");
    expect([t.raw[0], t.raw[1]]).toEqual([0xff, 0xd8]);
    const exif = (await http("GET", `/v1/images/${imageId}/exif`)).json;
    expect(exif.focal_length_mm).toBe(4.3);
  });

  it("an upload past its lifetime or never created answers 404; deleting the image answers 204", async () => {
    expectProblem(await http("POST", `/v1/uploads/${ABSENT}:finalize`), 404, `/v1/uploads/${ABSENT}:finalize`);
    expect((await http("DELETE", `/v1/images/${imageId}`)).status).toBe(204);
    expectProblem(await http("GET", `/v1/images/${imageId}`), 404, `/v1/images/${imageId}`);
  });
});
