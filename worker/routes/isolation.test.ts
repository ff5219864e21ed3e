/**
 * Tenant isolation over every id-addressed route (issue 22, Security; spec 5.3), in `api_key` mode.
 * The route list is generated from /openapi.json, so a new route is swept the day it is added:
 * every operation whose path names an id (`{...}`), admin routes aside (operator-only, outside
 * tenants). A tenant that owns a populated world (a sealed reconstruction, its job, artifacts,
 * images, an upload, a runner and a live lease) is probed by another tenant with the owner's ids:
 * every answer must be exactly what the intruder gets for ids that exist nowhere (status and
 * problem body), an error, never the owner's data; reads and writes sent with a body of the right
 * shape (BODIES) must reach the lookup and answer 404; and afterwards the owner's world is unchanged.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it, vi } from "vitest";
import worker from "../index";
import { DigestRunner } from "../../scripts/digest-runner";
import { BASE, type Call, type Reply, deployment, expectProblem, expectStatus, tenantClient, uploadBlob } from "../test/helpers";
import { scene, sealedReconstruction } from "../test/scene";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

const ABSENT = "01ARZ3NDEKTSV4RRFFQ69G5FAV";

/** The ids a path parameter may take: the owner's, and ones that exist nowhere. */
interface World {
  pid: string;
  did: string;
  rid: string;
  jid: string;
  iid: string;
  imageName: string;
  sha: string;
  uid: string;
  artifactId: string;
  runnerId: string;
  leaseId: string;
  smid: string;
}

let owner: Call;
let intruder: Call;
let mine: World;
let nowhere: World;
let document: { paths: Record<string, Record<string, { parameters?: { name: string; in: string; schema?: any }[] }>> };

beforeAll(async () => {
  const a = await tenantClient("isolation-owner");
  const b = await tenantClient("isolation-intruder");
  owner = a.call;
  intruder = b.call;
  const sealed = await sealedReconstruction(scene(20, 3), a);
  const images = (await expectStatus(owner("GET", `/v1/datasets/${sealed.did}/images`), 200)).json.items;
  const artifacts = (await expectStatus(owner("GET", `/v1/jobs/${sealed.jid}/artifacts`), 200)).json.items;
  const uid = (await expectStatus(owner("POST", "/v1/uploads", { expected_size: 4 }), 201)).json.upload_id;
  // A live lease: a features job on the same dataset, leased by the owner's runner.
  await expectStatus(owner("POST", `/v1/datasets/${sealed.did}/features`, { spec: { seed: 99 } }), 202);
  const runner = new DigestRunner({ base: BASE, fetch: a.fetch, name: "isolation" });
  await runner.register();
  const lease = (await runner.lease())!;
  mine = {
    pid: sealed.pid,
    did: sealed.did,
    rid: sealed.rid,
    jid: sealed.jid,
    iid: images[0].image_id,
    imageName: images[0].name,
    sha: images[0].content_sha,
    uid,
    artifactId: artifacts[0].artifact_id,
    runnerId: runner.runner!.runner_id,
    leaseId: lease.lease_id,
    smid: ABSENT, // no component was sealed apart from the root; the owner has none to find
  };
  // A lease id of the intruder's own tenant naming a job that does not exist, as a well-formed absent lease.
  const [, , nonce, secret] = lease.lease_id.split(".");
  nowhere = {
    ...Object.fromEntries(Object.keys(mine).map((k) => [k, ABSENT])),
    imageName: "nothing.jpg",
    sha: "0".repeat(64),
    leaseId: ["isolation-intruder", ABSENT, nonce, secret].join("."),
  } as World;
  document = (await expectStatus(owner("GET", "/openapi.json"), 200)).json;
});

/** The value of path parameter `name` of `path`, from `w`; integers (seq, idx, tile coordinates, observation ids) are 1. */
function valueOf(path: string, name: string, schema: any, w: World): string {
  // Integers (seq, idx, tile coordinates, a model's image and point ids) may be typed as digit strings.
  if (schema?.type === "integer" || /^\^?\\d|^\[0-9\]/.test(schema?.pattern ?? "")) return "1";
  if (["seq", "idx", "level", "x", "y", "z", "point3d_id"].includes(name) || (name === "image_id" && path.includes("/snapshots/")))
    return "1";
  if (Array.isArray(schema?.enum)) return schema.enum.includes("cameras.json") ? "cameras.json" : String(schema.enum[0]);
  switch (name) {
    case "pid":
      return w.pid;
    case "did":
      return w.did;
    case "rid":
      return path.startsWith("/v1/runners/") ? w.runnerId : w.rid;
    case "jid":
      return w.jid;
    case "image_id":
      return w.iid;
    case "name":
      return w.imageName;
    case "sha":
      return w.sha;
    case "uid":
      return w.uid;
    case "artifact_id":
      return w.artifactId;
    case "lease_id":
      return w.leaseId;
    case "smid":
      return w.smid;
    case "recipe":
      return "incremental";
    default:
      throw new Error(`no value for path parameter {${name}} of ${path}: add it to the sweep`);
  }
}

/** Every (method, path template) of the document that names an id, with the concrete path for `w`. */
function idRoutes(w: World) {
  const routes: { method: string; template: string; path: string }[] = [];
  for (const [template, ops] of Object.entries(document.paths)) {
    // Admin routes, error pages and backend descriptors (4.16: actions, config schemas, contracts; the same for every tenant) name no tenant's ids.
    if (!template.includes("{") || ["/v1/admin/", "/errors/", "/v1/backend/"].some((p) => template.startsWith(p))) continue;
    for (const [method, op] of Object.entries(ops)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
      const params = new Map((op.parameters ?? []).filter((p) => p.in === "path").map((p) => [p.name, p.schema]));
      const path = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(valueOf(template, name, params.get(name), w)));
      routes.push({ method: method.toUpperCase(), template, path });
    }
  }
  return routes;
}

const SHA = "a".repeat(64);
const IDENTITY = { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [0, 0, 0] };
/**
 * Bodies of the right shape for writes whose body is validated before the ids are looked up, so
 * the probe reaches the lookup (with `{}` they would answer 422 for any id and prove nothing).
 */
const BODIES = (w: World): Record<string, { body: unknown; headers?: Record<string, string> }> => ({
  "PATCH /v1/uploads/{uid}": { body: new Uint8Array(4), headers: { "Content-Range": "bytes 0-3/4" } },
  "POST /v1/projects/{pid}/datasets": { body: { name: "d", source: { kind: "upload", entries: [] } } },
  "POST /v1/datasets/{did}/images": { body: { name: "x.jpg", blob_sha: SHA } },
  "POST /v1/datasets/{did}/images:batchCreate": { body: { requests: [{ name: "x.jpg", blob_sha: SHA }] } },
  "PUT /v1/images/{image_id}/pose_prior": { body: { cam_from_world: IDENTITY } },
  "POST /v1/projects/{pid}/pipelines/{recipe}": { body: { dataset_id: w.did, spec: { kind: "incremental" } } },
  "POST /v1/leases/{lease_id}/events": { body: { events: [{ kind: "metric", key: "x", value: 1 }] } },
  "PUT /v1/leases/{lease_id}/checkpoint": { body: { blob_sha: SHA, byte_size: 1, summary: {} } },
  "POST /v1/leases/{lease_id}:complete": { body: { outputs_ref: { artifacts: [] } } },
  "POST /v1/leases/{lease_id}:fail": { body: { error_class: "X", message: "m", detail: null } },
  "POST /v1/leases/{lease_id}/snapshots": { body: { files: [], summary: { num_reg_images: 0, num_points3D: 0 } } },
  "PUT /v1/leases/{lease_id}/reconstruction-files/{name}": { body: { blob_sha: SHA, byte_size: 1 } },
  "POST /v1/reconstructions/{rid}/export": { body: { format: "ply" } },
  "POST /v1/reconstructions/{rid}/localize": { body: { blob_sha: SHA } },
  "POST /v1/reconstructions/{rid}/georegister": { body: { ...IDENTITY, scale: 1 } },
  "POST /v1/datasets/{did}:project_images": { body: { projection: "equirectangular_to_cubemap", face_size: 64 } },
  "POST /v1/leases/{lease_id}/datasets": { body: { images: [{ name: "x.jpg", blob_sha: SHA }] } },
  "POST /v1/projects/{pid}/datasets:import_kapture": { body: { archive_path: `blob:${SHA}` } },
  "POST /v1/projects/{pid}/datasets:from_video": { body: { video_path: `blob:${SHA}`, fps: 1 } },
  "POST /v1/runners/{rid}:complete_leases": { body: { completions: [{ lease_id: "l", outputs_ref: { artifacts: [] } }] } },
});

/** What a probe sends: a body of the right shape where one is known, else a JSON object on writes. */
const probe = (via: Call, method: string, template: string, path: string, w: World): Promise<Reply> => {
  const known = BODIES(w)[`${method} ${template}`];
  if (known) return via(method, path, known.body, known.headers);
  return method === "GET" || method === "DELETE" ? via(method, path) : via(method, path, {});
};

const withoutInstance = (json: any) => {
  if (!json || typeof json !== "object") return json;
  const { instance: _instance, ...rest } = json;
  return rest;
};

describe("tenant isolation over every id-addressed route of /openapi.json (api_key mode)", () => {
  it("another tenant's ids answer exactly as ids that exist nowhere: an error, never data", async () => {
    const foreign = idRoutes(mine);
    const absent = idRoutes(nowhere);
    expect(foreign.length).toBeGreaterThan(60);
    const leaks: string[] = [];
    const statuses = new Map<number, number>();
    for (const [i, route] of foreign.entries()) {
      const theirs = await probe(intruder, route.method, route.template, route.path, mine);
      const unseen = await probe(intruder, route.method, route.template, absent[i]!.path, nowhere);
      statuses.set(theirs.status, (statuses.get(theirs.status) ?? 0) + 1);
      const what = `${route.method} ${route.template}`;
      if (theirs.status < 400) leaks.push(`${what}: ${theirs.status}`);
      else if (theirs.status !== unseen.status) leaks.push(`${what}: ${theirs.status}, absent ids ${unseen.status}`);
      else if (JSON.stringify(withoutInstance(theirs.json)) !== JSON.stringify(withoutInstance(unseen.json)))
        leaks.push(`${what}: ${JSON.stringify(theirs.json)} vs ${JSON.stringify(unseen.json)}`);
      // A read answers 404, unless the route answers before any lookup: 501 for an unbuilt capability, 426 for a WebSocket without Upgrade.
      else if (route.method === "GET" && ![404, 426, 501].includes(theirs.status)) leaks.push(`${what}: GET ${theirs.status}`);
      // A write with a body of the right shape reaches the lookup: 404.
      else if (BODIES(mine)[what] && theirs.status !== 404) leaks.push(`${what}: ${theirs.status} with a well-formed body`);
      for (const r of [theirs, unseen]) if (r.res.body && !r.res.bodyUsed && !r.res.body.locked) await r.res.body.cancel();
    }
    console.log(`swept ${foreign.length} operations; intruder statuses: ${JSON.stringify(Object.fromEntries(statuses))}`);
    expect(leaks).toEqual([]);
  });

  it("the owner's world is untouched by the sweep", async () => {
    expect((await owner("GET", `/v1/projects/${mine.pid}`)).json.name).toBe("sealed");
    expect((await owner("GET", `/v1/images/${mine.iid}`)).status).toBe(200);
    expect((await owner("GET", `/v1/uploads/${mine.uid}`)).json.received_bytes).toBe(0);
    expect((await owner("GET", `/v1/reconstructions/${mine.rid}/snapshots`)).json.seqs).toEqual([1]);
    expect((await owner("GET", `/v1/jobs/${mine.jid}`)).json.status).toBe("succeeded");
    expect((await owner("GET", `/v1/artifacts/${mine.artifactId}`)).status).toBe(200);
    expect((await owner("POST", `/v1/leases/${mine.leaseId}:heartbeat`)).json.directive).toBe("continue");
    // A blob of the owner's cannot be named by the intruder either.
    const p = (await intruder("POST", "/v1/projects", { name: "b" })).json.project_id;
    const d = (await intruder("POST", `/v1/projects/${p}/datasets`, { name: "d", source: { kind: "upload", entries: [] } })).json
      .dataset_id;
    expect((await intruder("POST", `/v1/datasets/${d}/images`, { name: "x.jpg", blob_sha: mine.sha })).status).toBe(422);
    expect(await uploadBlob(new TextEncoder().encode("the intruder's own"), {}, intruder)).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe("sealed snapshot files in api_key mode: served under signed links (caching rule 2 made safe for shared caches)", () => {
  const file = () => `/v1/reconstructions/${mine.rid}/snapshots/1/cameras.json`;
  /** The signed link a keyed request is sent to. */
  const linkOf = async (path: string) => {
    const r = await owner("GET", path);
    expect(r.status, path).toBe(307);
    expect(r.headers.get("Cache-Control")).toBe("private, no-store");
    return r.headers.get("Location")!;
  };
  const keyless = deployment({ SVC_AUTH_MODE: "api_key" });

  it("a keyed read answers 307 to the signed link; the link serves the bytes without a key, with rule 2's caching, ETag, 304 and Range", async () => {
    const link = await linkOf(file());
    const url = new URL(link, BASE);
    expect(url.pathname).toBe(file());
    expect(url.searchParams.get("x-tenant")).toBe("isolation-owner");
    expect(url.searchParams.get("x-signature")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const expires = Number(url.searchParams.get("x-expires"));
    expect(expires * 1000 - Date.now()).toBeGreaterThanOrEqual(3600_000 - 5_000);
    expect(expires % 600).toBe(0);
    // The same window gives the same link, so a shared cache hits.
    expect(await linkOf(file())).toBe(link);

    const served = await keyless("GET", link);
    expect(served.status).toBe(200);
    expect(served.headers.get("Cache-Control")).toBe("public, max-age=31536000, immutable");
    expect(served.json).toEqual(scene(20, 3).cameras);
    const etag = served.headers.get("ETag")!;
    const raw = async (headers: Record<string, string>) => {
      const ctx = createExecutionContext();
      const res = await worker.fetch(
        new Request(new URL(link, BASE), { headers }),
        { ...env, SVC_AUTH_MODE: "api_key" } as unknown as Env,
        ctx,
      );
      await waitOnExecutionContext(ctx);
      return { status: res.status, body: new Uint8Array(await res.arrayBuffer()) };
    };
    expect((await raw({ "If-None-Match": etag })).status).toBe(304);
    const part = await raw({ Range: "bytes=0-9" });
    expect(part.status).toBe(206);
    expect(part.body.byteLength).toBe(10);
    // download=true is carried along.
    const download = new URL(await linkOf(`${file()}?download=true`), BASE);
    expect(download.searchParams.get("download")).toBe("true");
    // Tiles are sealed bytes too; observations are an API answer, served to the key as before.
    const tiles = await linkOf(`/v1/reconstructions/${mine.rid}/snapshots/1/tiles/index.json`);
    expect((await keyless("GET", tiles)).status).toBe(200);
    expect((await owner("GET", `/v1/reconstructions/${mine.rid}/snapshots/1/images/1/observations`)).status).toBe(200);
  });

  it("a link serves only its own path, tenant and expiry, and only to GET", async () => {
    const link = new URL(await linkOf(file()), BASE);
    const other = new URL(link);
    other.pathname = `/v1/reconstructions/${mine.rid}/snapshots/1/images.json`;
    const tenant = new URL(link);
    tenant.searchParams.set("x-tenant", "isolation-intruder");
    const later = new URL(link);
    later.searchParams.set("x-expires", String(Number(link.searchParams.get("x-expires")) + 600));
    const forged = new URL(link);
    forged.searchParams.set("x-signature", "A".repeat(43));
    for (const u of [other, tenant, later, forged]) expectProblem(await keyless("GET", u.pathname + u.search), 401, "auth");
    expectProblem(await keyless("POST", link.pathname + link.search, {}), 401, "auth");
    // Another tenant's key gets no link to the owner's file: 404, as for a reconstruction that does not exist.
    expectProblem(await intruder("GET", file()), 404, "not_found");
  });

  it("an expired link is refused; the key is SVC_URL_SIGNING_KEY when set", async () => {
    const secret = "a configured signing key of the deployment";
    const configured = deployment({ SVC_AUTH_MODE: "api_key", SVC_URL_SIGNING_KEY: secret });
    const sign = async (expires: number) => {
      const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
        "sign",
      ]);
      const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`GET\nisolation-owner\n${file()}\n${expires}`));
      const b64 = btoa(String.fromCharCode(...new Uint8Array(mac)))
        .replaceAll("+", "-")
        .replaceAll("/", "_")
        .replaceAll("=", "");
      return `${file()}?x-tenant=isolation-owner&x-expires=${expires}&x-signature=${b64}`;
    };
    const now = Math.floor(Date.now() / 1000);
    expect((await configured("GET", await sign(now + 600))).status).toBe(200);
    expectProblem(await configured("GET", await sign(now - 1)), 401, "auth");
    // A link signed with the configured key means nothing to a deployment with another key.
    expectProblem(await keyless("GET", await sign(now + 600)), 401, "auth");
  });
});
