import { DescriptorKind } from "../../protocol/wire/features";
import { POINT_DESCRIPTORS_FILE, encodePointDescriptors } from "../../protocol/wire/point-descriptors";
import { SELF, env, runInDurableObject } from "cloudflare:test";
import { beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { Lease } from "../../protocol";
import { TileIndexFile } from "../../protocol";
import { POINTS_HEADER_BYTES, decodePoints } from "../../protocol/wire/points";
import { DigestRunner } from "../../scripts/digest-runner";
import { tenantStore } from "../services/stores";
import {
  BASE,
  type Call,
  type Reply,
  call,
  collectGarbage,
  deployment,
  expectFieldError,
  expectProblem,
  expectStatus,
  jobEvents,
  sha256Hex,
  uploadBlob,
  selfFetch,
} from "../test/helpers";
import { scene } from "../test/scene";

// A whole pipeline job runs through the Durable Objects before the first test; slow on a loaded machine.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 120_000 });

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

interface Ctx {
  rid: string;
  jid: string;
  runner: DigestRunner;
  map: Lease;
  verify: Reply[];
}
let ctx: Ctx;

/** Uploads bytes under the map lease and names them as a seal file. */
async function file(name: string, bytes: Uint8Array, lease = ctx.map) {
  return { name, blob_sha: await ctx.runner.upload(lease, bytes), byte_size: bytes.byteLength };
}

const seal = (body: unknown, lease = ctx.map) => call("POST", `/v1/leases/${lease.lease_id}/snapshots`, body);
const snap = (seq: number, name: string, headers: Record<string, string> = {}) =>
  call("GET", `/v1/reconstructions/${ctx.rid}/snapshots/${seq}/${name}`, undefined, headers);
const bytesOf = async (path: string, headers: Record<string, string> = {}) => {
  const res = await SELF.fetch(`${BASE}${path}`, { headers });
  return { res, bytes: new Uint8Array(await res.arrayBuffer()) };
};

const main = scene(300);
const modelSummary = { num_reg_images: 3, num_points3D: 300 };
let first: { seq: number; body: unknown };

beforeAll(async () => {
  const p = await expectStatus(call("POST", "/v1/projects", { name: "recon" }), 201);
  const d = await expectStatus(
    call("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries: [] } }),
    201,
  );
  for (let i = 0; i < 2; i++) {
    const sha = await uploadBlob(enc({ image: i, nonce: Math.random() }));
    await expectStatus(call("POST", `/v1/datasets/${d.json.dataset_id}/images`, { name: `img${i}.jpg`, blob_sha: sha }), 201);
  }
  const job = await expectStatus(
    call("POST", `/v1/projects/${p.json.project_id}/pipelines/incremental`, {
      dataset_id: d.json.dataset_id,
      spec: { kind: "incremental" },
    }),
    202,
  );
  const runner = new DigestRunner({ base: BASE, fetch: selfFetch, name: "snapshots" });
  await runner.register();
  const verify: Ctx["verify"] = [];
  for (;;) {
    const lease = (await runner.lease())!;
    if (lease.task.job_id !== job.json.job_id) throw new Error("another job's task was leased");
    if (lease.task.kind === "map") {
      ctx = { rid: job.json.recon_id, jid: job.json.job_id, runner, map: lease, verify };
      break;
    }
    if (lease.task.kind === "verify") {
      // While verify runs: its lease may not seal a snapshot, but writes the reconstruction files.
      ctx = { rid: job.json.recon_id, jid: job.json.job_id, runner, map: lease, verify };
      const put = async (name: string, v: unknown) => {
        const f = await file(name, enc(v), lease);
        return call("PUT", `/v1/leases/${lease.lease_id}/reconstruction-files/${name}`, { blob_sha: f.blob_sha, byte_size: f.byte_size });
      };
      const cams = await file("cameras.json", enc(main.cameras), lease);
      verify.push(await seal({ files: [cams], summary: modelSummary }, lease));
      verify.push(await put("two_view_geometries.json", { pairs: [{ image_id1: 1, image_id2: 2, type: "bogus" }] }));
      const tvg = {
        pairs: [
          {
            image_id1: 1,
            image_id2: 2,
            type: "calibrated",
            num_inliers: 2,
            F: null,
            E: [1, 0, 0, 0, 1, 0, 0, 0, 1],
            H: null,
            inlier_matches: [
              [0, 0],
              [1, 1],
            ],
          },
        ],
      };
      verify.push(await put("two_view_geometries.json", tvg));
      verify.push(await put("correspondence_graph.json", { pairs: [] }));
      verify.push(await put("correspondence_graph.json", { pairs: [{ image_id1: 1, image_id2: 2, matches: [[0, 0]] }] }));
    }
    await runner.work(lease);
  }
  first = {
    seq: 0,
    body: {
      files: [
        await file("cameras.json", enc(main.cameras)),
        await file("images.json", enc(main.images)),
        await file("points.bin", main.points),
        await file("summary.json", enc(main.summary)),
      ],
      summary: { ...modelSummary, phase: "incremental_register" },
    },
  };
});

// The map lease must outlive the whole file (30 s TTL): every test starts by holding it again.
beforeEach(async () => {
  if (ctx?.map.task.kind === "map") await ctx.runner.heartbeat(ctx.map);
});

describe("sealing (runner protocol extension; spec 2.10, 3.5)", () => {
  it("refuses bad seals with 422 naming the field, and records nothing", async () => {
    const cams = await file("cameras.json", enc(main.cameras));
    const unknown = { name: "images.json", blob_sha: await sha256Hex(enc({ never: "uploaded" })), byte_size: 20 };
    expectFieldError(await seal({ files: [cams, unknown], summary: modelSummary }), "files.1.blob_sha", "unknown_blob");
    expectFieldError(
      await seal({ files: [{ ...cams, byte_size: cams.byte_size + 1 }], summary: modelSummary }),
      "files.0.byte_size",
      "size_mismatch",
    );

    const noWidth = { cameras: [{ ...main.cameras.cameras[0], width: undefined }] };
    expectFieldError(await seal({ files: [await file("cameras.json", enc(noWidth))], summary: modelSummary }), "files.0", "invalid_file");
    expectFieldError(
      await seal({ files: [await file("images.json", new TextEncoder().encode("{not json"))], summary: modelSummary }),
      "files.0",
      "invalid_file",
    );

    const badMagic = main.points.slice();
    badMagic[0] = 0x58;
    expectFieldError(await seal({ files: [await file("points.bin", badMagic)], summary: modelSummary }), "files.0", "invalid_file");
    const truncated = main.points.slice(0, main.points.byteLength - 26);
    expectFieldError(await seal({ files: [await file("points.bin", truncated)], summary: modelSummary }), "files.0", "invalid_file");
    // Swap the ids of the first two records: no longer ascending (2.14 rule 1).
    const unsorted = main.points.slice();
    const v = new DataView(unsorted.buffer);
    v.setBigUint64(POINTS_HEADER_BYTES + 18, 13n, true);
    v.setBigUint64(POINTS_HEADER_BYTES + 26 + 18, 10n, true);
    const r = await seal({ files: [await file("points.bin", unsorted)], summary: modelSummary });
    expectFieldError(r, "files.0", "invalid_file");
    expect(r.json.errors[0].message).toMatch(/ascending/);

    // Files that contradict each other: an image's camera, or an observed point, missing.
    const otherCamera = { cameras: [{ ...main.cameras.cameras[0]!, camera_id: 2 }] };
    const imgs = await file("images.json", enc(main.images));
    expectFieldError(
      await seal({ files: [await file("cameras.json", enc(otherCamera)), imgs], summary: modelSummary }),
      "files",
      "inconsistent",
    );
    const fewer = scene(299).points;
    expectFieldError(
      await seal({
        files: [],
        submodels: [{ idx: 0, files: [imgs, await file("points.bin", fewer)], summary: modelSummary }],
        summary: modelSummary,
      }),
      "submodels.0.files",
      "inconsistent",
    );
    // Our x-point_descriptors.bin: its own layout, and only points points.bin holds.
    const described = (ids: number[]) =>
      encodePointDescriptors({
        ids,
        descriptorDim: 128,
        descriptorKind: DescriptorKind.siftL1Root,
        descriptors: new Uint8Array(128 * ids.length),
        numImages: 1,
        numImagesSkipped: 0,
      });
    const notDescriptors = described([10]);
    notDescriptors[0] = 0x58;
    expectFieldError(
      await seal({ files: [await file(POINT_DESCRIPTORS_FILE, notDescriptors)], summary: modelSummary }),
      "files.0",
      "invalid_file",
    );
    const stranger = await seal({
      files: [imgs, await file("points.bin", main.points), await file(POINT_DESCRIPTORS_FILE, described([10, 11]))],
      summary: modelSummary,
    });
    expectFieldError(stranger, "files", "inconsistent");
    expect(stranger.json.errors[0].message).toMatch(/describes point 11/);

    for (const name of ["../cameras.json", "tiles/index.json", "cameras.json/../../x", "dense/fused.bin"]) {
      expectFieldError(await seal({ files: [{ ...cams, name }], summary: modelSummary }), "files.0.name");
    }
    expectFieldError(await seal({ files: [cams, cams], summary: modelSummary }), "files.1.name", "duplicate");
    expectFieldError(await seal({ files: [cams], summary: { num_reg_images: 3 } }), "summary.num_points3D");
    expectFieldError(
      await seal({
        files: [],
        submodels: [
          { idx: 0, files: [cams], summary: modelSummary },
          { idx: 0, files: [], summary: modelSummary },
        ],
        summary: modelSummary,
      }),
      "submodels.1.idx",
      "duplicate",
    );

    expect((await call("GET", `/v1/reconstructions/${ctx.rid}/snapshots`)).json.seqs).toEqual([]);
    expect((await call("GET", `/v1/reconstructions/${ctx.rid}/submodels`)).json.items).toEqual([]);
  });

  it("a verify task's lease may not seal (409) but writes the reconstruction files, validated", async () => {
    const [sealed, badTvg, tvg, cg1, cg2] = ctx.verify;
    expectProblem(sealed!, 409, "conflict");
    expectFieldError(badTvg!, "blob_sha", "invalid_file");
    for (const r of [tvg, cg1, cg2]) expect(r!.status).toBe(204);
    const got = await call("GET", `/v1/reconstructions/${ctx.rid}/two_view_geometries.json`);
    expect(got.status).toBe(200);
    expect(got.json.pairs[0]).toMatchObject({ type: "calibrated", num_inliers: 2 });
    expect(got.headers.get("ETag")).toMatch(/^"[0-9a-f]{64}"$/);
    expect(
      (await bytesOf(`/v1/reconstructions/${ctx.rid}/two_view_geometries.json`, { "If-None-Match": got.headers.get("ETag")! })).res.status,
    ).toBe(304);
    // The later write replaced the earlier one.
    expect((await call("GET", `/v1/reconstructions/${ctx.rid}/correspondence_graph.json`)).json.pairs).toHaveLength(1);
  });

  it("seals seq 1, 2, ... immutably; a retried seal answers the same seq; SubModels follow the latest", async () => {
    const r1 = await expectStatus(seal(first.body), 201);
    expect(r1.json).toMatchObject({ recon_id: ctx.rid, snapshot_seq: 1, created: true });
    first.seq = 1;
    const again = await expectStatus(seal(first.body), 200);
    expect(again.json).toMatchObject({ snapshot_seq: 1, created: false });
    const before = await snap(1, "cameras.json");

    // Seq 2: two components; the larger one (idx 1) is what the root routes serve.
    const small = scene(40, 7);
    const body2 = {
      files: [
        await file(
          "summary.json",
          enc({
            ...main.summary,
            models: [
              { idx: 0, num_reg_images: 2, num_points3D: 40 },
              { idx: 1, num_reg_images: 3, num_points3D: 300 },
            ],
          }),
        ),
      ],
      submodels: [
        {
          idx: 0,
          files: [await file("points.bin", small.points), await file("cameras.json", enc(small.cameras))],
          summary: { num_reg_images: 2, num_points3D: 40 },
        },
        {
          idx: 1,
          files: [
            await file("points.bin", main.points),
            await file("images.json", enc(main.images)),
            await file("cameras.json", enc(main.cameras)),
          ],
          summary: modelSummary,
        },
      ],
      summary: { num_reg_images: 5, num_points3D: 340 },
    };
    expect((await expectStatus(seal(body2), 201)).json.snapshot_seq).toBe(2);
    expect((await call("GET", `/v1/reconstructions/${ctx.rid}/snapshots`)).json.seqs).toEqual([1, 2]);

    const after = await snap(1, "cameras.json");
    expect(after.headers.get("ETag")).toBe(before.headers.get("ETag"));
    expect(after.json).toEqual(main.cameras);
    // Root of seq 2 = component 1 (most registered images); its points are main's.
    const root = await bytesOf(`/v1/reconstructions/${ctx.rid}/snapshots/2/points.bin`);
    expect(decodePoints(root.bytes).count).toBe(300);
    const comp0 = await bytesOf(`/v1/reconstructions/${ctx.rid}/snapshots/2/submodels/0/points.bin`);
    expect(decodePoints(comp0.bytes).count).toBe(40);
    expectProblem(await call("GET", `/v1/reconstructions/${ctx.rid}/snapshots/2/submodels/0/images.json`), 404, "not_found");
    expectProblem(await call("GET", `/v1/reconstructions/${ctx.rid}/snapshots/2/submodels/7/points.bin`), 404, "not_found");

    const page1 = (await call("GET", `/v1/reconstructions/${ctx.rid}/submodels?page_size=1`)).json;
    expect(page1.total).toBe(2);
    expect(page1.next_page_token).toEqual(expect.any(String));
    const page2 = (await call("GET", `/v1/reconstructions/${ctx.rid}/submodels?page_size=1&page_token=${page1.next_page_token}`)).json;
    expect(page2.next_page_token).toBeNull();
    const subs = [...page1.items, ...page2.items].sort((a, b) => a.idx - b.idx);
    expect(subs.map((s) => [s.idx, s.snapshot_seq, s.parent_submodel_id])).toEqual([
      [0, 2, null],
      [1, 2, null],
    ]);
    expect(subs[0].summary).toEqual({ num_reg_images: 2, num_points3D: 40 });
    const one = await call("GET", `/v1/submodels/${subs[1].submodel_id}`);
    expect(one.json).toMatchObject({
      recon_id: ctx.rid,
      idx: 1,
      summary: modelSummary,
      _links: { reconstruction: { href: `/v1/reconstructions/${ctx.rid}` } },
    });
    expectProblem(await call("GET", "/v1/submodels/01ARZ3NDEKTSV4RRFFQ69G5FAV"), 404, "not_found");
  });
});

/**
 * Reads a model's whole tiling at `base` and checks it: the index agrees with its tiles, every
 * tile holds the points of its half-open cell with the cell's box as bbox, ascending ids, and
 * every level holds each of `ids` exactly once. Answers the index.
 */
async function expectTiling(base: string, ids: BigUint64Array): Promise<TileIndexFile> {
  const idx = await call("GET", `${base}/tiles/index.json`);
  expect(idx.status).toBe(200);
  const index = TileIndexFile.parse(idx.json);
  expect(index.tile_count).toBe(index.tiles.length);
  expect(index.tiles.filter((t) => t.level === 0)).toEqual([expect.objectContaining({ level: 0, x: 0, y: 0, z: 0, count: ids.length })]);
  expect((await bytesOf(`${base}/tiles/index.json`, { "If-None-Match": idx.headers.get("ETag")! })).res.status).toBe(304);

  const ext = [0, 1, 2].map((k) => index.bbox_max[k]! - index.bbox_min[k]!);
  for (let level = 0; level <= index.max_level; level++) {
    const seen: bigint[] = [];
    const side = 2 ** level;
    for (const t of index.tiles.filter((t) => t.level === level)) {
      const { res, bytes } = await bytesOf(`${base}/tiles/${t.level}/${t.x}/${t.y}/${t.z}.bin`);
      expect(res.status).toBe(200);
      expect(res.headers.get("Cache-Control")).toBe("public, max-age=31536000, immutable");
      expect(bytes.byteLength).toBe(t.byte_size);
      const tile = decodePoints(bytes);
      expect(tile.count).toBe(t.count);
      const cell = [t.x, t.y, t.z];
      for (let k = 0; k < 3; k++) {
        expect(tile.bboxMin[k]).toBeCloseTo(index.bbox_min[k]! + (ext[k]! * cell[k]!) / side, 5);
        expect(tile.bboxMax[k]).toBeCloseTo(index.bbox_min[k]! + (ext[k]! * (cell[k]! + 1)) / side, 5);
      }
      for (let i = 0; i < tile.count; i++) {
        for (let k = 0; k < 3; k++) {
          const v = tile.xyz[3 * i + k]!;
          // Half-open [lo, hi); only the bbox's top face belongs to the last cell.
          expect(v).toBeGreaterThanOrEqual(tile.bboxMin[k]! - 1e-6);
          if (cell[k]! < side - 1) expect(v).toBeLessThan(tile.bboxMax[k]! + 1e-6);
        }
      }
      for (let i = 1; i < tile.count; i++) expect(tile.ids[i]! > tile.ids[i - 1]!).toBe(true);
      seen.push(...tile.ids);
    }
    expect(seen.sort((a, b) => (a < b ? -1 : 1))).toEqual([...ids]);
  }
  return index;
}

describe("reads (4.9)", () => {
  it("/openapi.json documents the seal and read routes", async () => {
    const paths = Object.keys((await call("GET", "/openapi.json")).json.paths);
    for (const p of [
      "/v1/leases/{lease_id}/snapshots",
      "/v1/leases/{lease_id}/reconstruction-files/{name}",
      "/v1/reconstructions/{rid}",
      "/v1/reconstructions/{rid}/submodels",
      "/v1/submodels/{smid}",
      "/v1/reconstructions/{rid}/snapshots",
      "/v1/reconstructions/{rid}/snapshots/{seq}/{name}",
      "/v1/reconstructions/{rid}/snapshots/{seq}/submodels/{idx}/{name}",
      "/v1/reconstructions/{rid}/snapshots/{seq}/tiles/index.json",
      "/v1/reconstructions/{rid}/snapshots/{seq}/tiles/{level}/{x}/{y}/{z}.bin",
      "/v1/reconstructions/{rid}/snapshots/{seq}/images/{image_id}/observations",
      "/v1/reconstructions/{rid}/snapshots/{seq}/points/{point3d_id}/visibility",
      "/v1/reconstructions/{rid}/snapshots/{seq}/submodels/{idx}/tiles/index.json",
      "/v1/reconstructions/{rid}/snapshots/{seq}/submodels/{idx}/tiles/{level}/{x}/{y}/{z}.bin",
      "/v1/reconstructions/{rid}/snapshots/{seq}/submodels/{idx}/images/{image_id}/observations",
      "/v1/reconstructions/{rid}/snapshots/{seq}/submodels/{idx}/points/{point3d_id}/visibility",
      "/v1/reconstructions/{rid}/two_view_geometries.json",
      "/v1/reconstructions/{rid}/correspondence_graph.json",
    ]) {
      expect(paths, p).toContain(p);
    }
  });

  it("the reconstruction mirrors its job", async () => {
    const r = await call("GET", `/v1/reconstructions/${ctx.rid}`);
    expect(r.json).toMatchObject({ recon_id: ctx.rid, status: "running", "x-job_id": ctx.jid, spec: { kind: "incremental" } });
    expect(r.json._links.snapshots.href).toBe(`/v1/reconstructions/${ctx.rid}/snapshots`);
    expectProblem(await call("GET", "/v1/reconstructions/01ARZ3NDEKTSV4RRFFQ69G5FAV"), 404, "not_found");
    expectProblem(await call("GET", "/v1/reconstructions/01ARZ3NDEKTSV4RRFFQ69G5FAV/snapshots"), 404, "not_found");
  });

  it("sealed files: ETag = sha, 304, Range 206/416, immutable caching, download, names checked", async () => {
    const r = await snap(1, "images.json");
    expect(r.status).toBe(200);
    expect(r.json).toEqual(main.images);
    expect(r.headers.get("ETag")).toBe(`"${await sha256Hex(enc(main.images))}"`);
    expect(r.headers.get("Cache-Control")).toBe("public, max-age=31536000, immutable");
    expect(r.headers.get("Content-Type")).toBe("application/json");
    expect(
      (await bytesOf(`/v1/reconstructions/${ctx.rid}/snapshots/1/images.json`, { "If-None-Match": r.headers.get("ETag")! })).res.status,
    ).toBe(304);

    const head = await bytesOf(`/v1/reconstructions/${ctx.rid}/snapshots/1/points.bin`, { Range: "bytes=0-43" });
    expect(head.res.status).toBe(206);
    expect(head.res.headers.get("Content-Range")).toBe(`bytes 0-43/${main.points.byteLength}`);
    expect(head.res.headers.get("Content-Type")).toBe("application/x-sfm-points-v1");
    expect(head.bytes).toEqual(main.points.subarray(0, 44));
    expectProblem(await snap(1, "points.bin", { Range: `bytes=${main.points.byteLength}-` }), 416, "range_not_satisfiable");

    // Seq 1 was sealed as a single model: its component 0 is the root.
    const sub = await call("GET", `/v1/reconstructions/${ctx.rid}/snapshots/1/submodels/0/images.json`);
    expect(sub.headers.get("ETag")).toBe(r.headers.get("ETag"));
    expectProblem(await call("GET", `/v1/reconstructions/${ctx.rid}/snapshots/1/submodels/1/images.json`), 404, "not_found");

    const dl = await snap(1, "summary.json?download=true");
    expect(dl.headers.get("Content-Disposition")).toBe('attachment; filename="summary.json"');

    expectProblem(await snap(1, "rigs.json"), 404, "not_found");
    expectProblem(await snap(9, "cameras.json"), 404, "not_found");
    // A name outside the spec's list (4.9 rule 1) names no file: no path escapes the snapshot.
    for (const path of ["secrets.txt", "..%2F..%2Fcameras.json", "%2e%2e", "cameras.json%00", "..%2Fcameras.json"])
      expectProblem(await snap(1, path), 404, "not_found");
  });

  it("tiles: the index matches points.bin, every point is in exactly one tile per level, tile headers carry the cell box, empty cells 404", async () => {
    const base = `/v1/reconstructions/${ctx.rid}/snapshots/1`;
    const index = await expectTiling(base, main.ids);
    expect(index.max_level).toBeGreaterThanOrEqual(2);
    const finest = index.max_level;
    const taken = new Set(index.tiles.filter((t) => t.level === finest).map((t) => `${t.x}/${t.y}/${t.z}`));
    let empty = "";
    for (let i = 0; i < 8 ** finest && !empty; i++) {
      const key = `${i % 2 ** finest}/${Math.floor(i / 2 ** finest) % 2 ** finest}/${Math.floor(i / 4 ** finest)}`;
      if (!taken.has(key)) empty = key;
    }
    expect(empty).not.toBe("");
    expectProblem(await call("GET", `${base}/tiles/${finest}/${empty}.bin`), 404, "not_found");
    expectProblem(await call("GET", `${base}/tiles/${finest + 1}/0/0/0.bin`), 404, "not_found");
    expectProblem(await call("GET", `${base}/tiles/0/0/0/x.bin`), 404, "not_found");
  });

  it("each component has its own tiles under submodels/{idx}/; the root's are the largest component's", async () => {
    const seq2 = `/v1/reconstructions/${ctx.rid}/snapshots/2`;
    const small = await expectTiling(`${seq2}/submodels/0`, scene(40, 7).ids);
    const large = await expectTiling(`${seq2}/submodels/1`, main.ids);
    expect(small.tiles.find((t) => t.level === 0)!.count).toBe(40);
    const root = await call("GET", `${seq2}/tiles/index.json`);
    expect(root.json).toEqual(large);
    expect(root.headers.get("ETag")).toBe((await call("GET", `${seq2}/submodels/1/tiles/index.json`)).headers.get("ETag"));
    expectProblem(await call("GET", `${seq2}/submodels/7/tiles/index.json`), 404, "not_found");
    expectProblem(await call("GET", `${seq2}/submodels/7/tiles/0/0/0/0.bin`), 404, "not_found");
  });

  it("observations and visibility agree with images.json; 404 for an unknown image or point, and without images.json", async () => {
    const obs = await call("GET", `/v1/reconstructions/${ctx.rid}/snapshots/1/images/2/observations`);
    expect(obs.status).toBe(200);
    const image = main.images.images[1]!;
    expect(obs.json.image_id).toBe(2);
    expect(obs.json.count).toBe(300);
    obs.json.observations.forEach((o: any) => {
      const kp = image.points2D[o.kp_idx]!;
      expect([o.x, o.y]).toEqual(kp.xy);
      expect(o.point3d_id).toBe(kp.point3d_id);
      // Exact projections of float32-rounded points: a tiny reprojection error.
      expect(o.error).toBeLessThan(1e-3);
    });
    expect(obs.json.observations[0].kp_idx).toBe(1);
    expectProblem(await call("GET", `/v1/reconstructions/${ctx.rid}/snapshots/1/images/99/observations`), 404, "not_found");

    const id = Number(main.ids[5]);
    const vis = await call("GET", `/v1/reconstructions/${ctx.rid}/snapshots/1/points/${id}/visibility`);
    expect(vis.json).toEqual({
      point3d_id: id,
      count: 3,
      observations: main.images.images.map((im) => ({
        image_id: im.image_id,
        x: im.points2D[6]!.xy[0],
        y: im.points2D[6]!.xy[1],
        kp_idx: 6,
      })),
    });
    // A point no image sees is no point of the snapshot: 404, as an unknown image is.
    expectProblem(await call("GET", `/v1/reconstructions/${ctx.rid}/snapshots/1/points/11/visibility`), 404, "not_found");

    // Each component's sidecar comes from its own images.json: seq 2's component 1 (the root) has
    // one; component 0 has none, so no sidecar.
    const seq2 = `/v1/reconstructions/${ctx.rid}/snapshots/2`;
    expect((await call("GET", `${seq2}/submodels/1/images/2/observations`)).json).toEqual(
      (await call("GET", `${seq2}/images/2/observations`)).json,
    );
    expect((await call("GET", `${seq2}/submodels/1/points/${id}/visibility`)).json).toEqual(vis.json);
    expectProblem(await call("GET", `${seq2}/submodels/0/images.json`), 404, "not_found");
    for (const path of ["images/1/observations", `points/${id}/visibility`]) {
      expectProblem(await call("GET", `${seq2}/submodels/0/${path}`), 404, "not_found");
      expectProblem(await call("GET", `${seq2}/submodels/7/${path}`), 404, "not_found");
    }
    const bare = await expectStatus(seal({ files: [await file("points.bin", main.points)], summary: modelSummary }), 201);
    for (const path of ["images/1/observations", `points/${id}/visibility`]) {
      expectProblem(await call("GET", `/v1/reconstructions/${ctx.rid}/snapshots/${bare.json.snapshot_seq}/${path}`), 404, "not_found");
    }
  });

  it("another tenant's reconstruction is absent (404), and so are its files", async () => {
    const apiKey = deployment({ SVC_AUTH_MODE: "api_key" });
    const key = async (tenant: string) => (await expectStatus(call("POST", "/v1/admin/api-keys", { tenant_id: tenant }), 201)).json.raw_key;
    const as =
      (k: string): Call =>
      (method, path, body, headers = {}) =>
        apiKey(method, path, body, { Authorization: `Bearer ${k}`, ...headers });
    const mine = as(await key("default"));
    const theirs = as(await key("other-co"));
    for (const path of [
      "",
      "/snapshots",
      "/submodels",
      "/snapshots/1/cameras.json",
      "/snapshots/1/tiles/index.json",
      "/snapshots/1/images/1/observations",
      "/two_view_geometries.json",
    ]) {
      // Sealed files and tiles are served at their signed link (services/signed-urls.ts).
      const own = await mine("GET", `/v1/reconstructions/${ctx.rid}${path}`);
      const sealed = /\/snapshots\/1\/(cameras\.json|tiles\/)/.test(path);
      expect(own.status, path).toBe(sealed ? 307 : 200);
      if (sealed) expect((await apiKey("GET", own.headers.get("Location")!)).status, path).toBe(200);
      expectProblem(await theirs("GET", `/v1/reconstructions/${ctx.rid}${path}`), 404, "not_found");
    }
  });
});

/** The tenant's reference count of a blob. */
const refcount = (sha: string) =>
  runInDurableObject(
    tenantStore(env, "default"),
    (_o, state) =>
      state.storage.sql.exec<{ refcount: number }>("SELECT refcount FROM blobs WHERE sha = ?", sha).toArray()[0]?.refcount ?? 0,
  );

describe("after the map task", () => {
  it("snapshot_available appears in the job's SSE once per seq, with its summary; the reconstruction then reads succeeded", async () => {
    await ctx.runner.work(ctx.map);
    const announced: any[] = (await jobEvents(ctx.jid)).filter((e) => e.kind === "snapshot_available");
    expect(announced.map((e) => e.snapshot_seq)).toEqual([1, 2, 3]);
    expect(announced[0]).toMatchObject({ task_id: ctx.map.task.task_id, summary: { ...modelSummary, phase: "incremental_register" } });
    expect((await call("GET", `/v1/reconstructions/${ctx.rid}`)).json.status).toBe("succeeded");
    // The lease has ended: no more seals under it.
    expectProblem(await seal(first.body), 409, "conflict");
  });

  it("a pipeline whose tasks are all cache hits (the same photos and settings in another project) gives its reconstruction the cached map task's last snapshot", async () => {
    const pointsSha = await sha256Hex(main.points);
    const held = await refcount(pointsSha);
    const recon = (await call("GET", `/v1/reconstructions/${ctx.rid}`)).json;
    const images = (await call("GET", `/v1/datasets/${recon.dataset_id}/images`)).json.items as { name: string; content_sha: string }[];
    const p = await expectStatus(call("POST", "/v1/projects", { name: "recon-again" }), 201);
    const d = await expectStatus(
      call("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries: [] } }),
      201,
    );
    for (const im of images)
      await expectStatus(call("POST", `/v1/datasets/${d.json.dataset_id}/images`, { name: im.name, blob_sha: im.content_sha }), 201);
    const job = await expectStatus(
      call("POST", `/v1/projects/${p.json.project_id}/pipelines/incremental`, {
        dataset_id: d.json.dataset_id,
        spec: { kind: "incremental" },
      }),
      202,
    );
    const rid = job.json.recon_id as string;
    expect(rid).not.toBe(ctx.rid);
    const detail = (await call("GET", `/v1/jobs/${job.json.job_id}`)).json;
    expect(detail.status).toBe("succeeded");
    expect(detail.tasks.every((t: { cache_hit: boolean }) => t.cache_hit)).toBe(true);

    // The map task's last seal was seq 3 (points.bin alone): it is the new reconstruction's seq 1.
    expect((await call("GET", `/v1/reconstructions/${rid}`)).json.status).toBe("succeeded");
    expect((await call("GET", `/v1/reconstructions/${rid}/snapshots`)).json.seqs).toEqual([1]);
    const etag = async (path: string) => (await bytesOf(path)).res.headers.get("ETag");
    expect(await etag(`/v1/reconstructions/${rid}/snapshots/1/points.bin`)).toBe(
      await etag(`/v1/reconstructions/${ctx.rid}/snapshots/3/points.bin`),
    );
    expectProblem(await call("GET", `/v1/reconstructions/${rid}/snapshots/1/images.json`), 404, "not_found");
    expect((await call("GET", `/v1/reconstructions/${rid}/snapshots/1/tiles/index.json`)).json).toEqual(
      (await call("GET", `/v1/reconstructions/${ctx.rid}/snapshots/3/tiles/index.json`)).json,
    );
    const submodels = (await call("GET", `/v1/reconstructions/${rid}/submodels`)).json.items;
    expect(submodels.map((m: any) => [m.idx, m.snapshot_seq, m.summary])).toEqual([[0, 1, modelSummary]]);
    for (const name of ["two_view_geometries.json", "correspondence_graph.json"]) {
      expect(await etag(`/v1/reconstructions/${rid}/${name}`)).toBe(await etag(`/v1/reconstructions/${ctx.rid}/${name}`));
    }
    const announced = (await jobEvents(job.json.job_id)).filter((e) => e.kind === "snapshot_available");
    expect(announced).toEqual([
      expect.objectContaining({ task_id: detail.tasks.at(-1).task_id, snapshot_seq: 1, summary: { ...modelSummary } }),
    ]);

    // The adopted files are held by the new reconstruction too, until its project goes.
    expect(await refcount(pointsSha)).toBeGreaterThan(held);
    await expectStatus(call("DELETE", `/v1/projects/${p.json.project_id}`), 204);
    expect(await refcount(pointsSha)).toBe(held);
  });

  it("the reconstruction holds its snapshots' blobs until its project is deleted", async () => {
    const pointsSha = await sha256Hex(main.points);
    // Cited by three snapshots: one reference for the reconstruction, one for the job that uploaded it, and one per
    // artifact listing it (2.11): the root and the component holding it of seq 1, 2 and 3.
    const artifacts = (await call("GET", `/v1/reconstructions/${ctx.rid}/artifacts?page_size=500`)).json.items as {
      files: { blob_sha: string }[];
    }[];
    const citing = artifacts.filter((a) => a.files.some((f) => f.blob_sha === pointsSha)).length;
    expect(citing).toBe(6);
    expect(await refcount(pointsSha)).toBe(2 + citing);
    const derived = `t/default/blobs/${pointsSha}/`;
    expect((await env.BLOBS.list({ prefix: derived })).objects.length).toBeGreaterThan(0);
    const pid = (await call("GET", `/v1/reconstructions/${ctx.rid}`)).json.project_id;
    await expectStatus(call("DELETE", `/v1/projects/${pid}`), 204);
    expect(await refcount(pointsSha)).toBe(0);
    // The points' derived tiles go with the points.
    await collectGarbage();
    expect((await env.BLOBS.list({ prefix: derived })).objects).toEqual([]);
    expectProblem(await call("GET", `/v1/reconstructions/${ctx.rid}`), 404, "not_found");
    expectProblem(await snap(1, "points.bin"), 404, "not_found");
  });
});
