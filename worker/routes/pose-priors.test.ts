import { SELF, env, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { DigestRunner } from "../../scripts/digest-runner";
import { tenantStore } from "../services/stores";
import {
  BASE,
  type Call,
  call,
  expectFieldError,
  expectProblem,
  expectStatus,
  newDataset,
  tenantCallers,
  selfFetch,
  uploadBlob,
} from "../test/helpers";
import { LUND_01, SACRE_COEUR } from "../test/photos";

const ABSENT = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
const identity6: number[] = Array.from({ length: 36 }, (_, k) => (k % 7 === 0 ? 1 : 0));
const prior = (extra: Record<string, unknown> = {}) => ({
  cam_from_world: { rotation: { w: Math.SQRT1_2, x: 0, y: Math.SQRT1_2, z: 0 }, translation: [1, -2, 3.5] },
  ...extra,
});

/** A dataset with `n` images (distinct bytes), answering their ids. */
async function imagesOf(n: number) {
  const { pid, did } = await newDataset();
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const sha = await uploadBlob(new TextEncoder().encode(`prior image ${i} ${Math.random()}`));
    ids.push((await expectStatus(call("POST", `/v1/datasets/${did}/images`, { name: `f${i}.jpg`, blob_sha: sha }), 201)).json.image_id);
  }
  return { pid, did, ids };
}

const priorRows = (where: string, ...params: string[]) =>
  runInDurableObject(
    tenantStore(env, "default"),
    (_o, state) => state.storage.sql.exec(`SELECT image_id FROM pose_priors WHERE ${where}`, ...params).toArray().length,
  );

describe("pose priors (4.12)", () => {
  let did: string;
  let ids: string[];
  beforeAll(async () => {
    ({ did, ids } = await imagesOf(3));
  });

  it("are advertised, and an image without one reads as 200 null (not 404)", async () => {
    expect((await call("GET", "/v1/capabilities")).json.features["pose_priors.read_write"]).toBe(true);
    const r = await expectStatus(call("GET", `/v1/images/${ids[0]}/pose_prior`), 200);
    expect(r.json).toBeNull();
    expect((await call("GET", `/v1/datasets/${did}/pose_priors`)).json).toEqual({ pose_priors: {} });
  });

  it("PUT echoes the prior, GET reads it back, DELETE removes it (204, then null)", async () => {
    const body = prior({
      covariance: identity6.map((v) => v * 0.01),
      gps: { latitude: 48.8867, longitude: 2.3431, altitude: 130.5, horizontal_accuracy_m: 4 },
      timestamp_ns: 1_700_000_000_123,
      imu: { timestamp_ns: 1_700_000_000_100, gyro: [0.01, -0.02, 0.03], accel: [0, 9.81, 0.1] },
    });
    const put = await expectStatus(call("PUT", `/v1/images/${ids[0]}/pose_prior`, body), 200);
    expect(put.json).toEqual(body);
    expect((await call("GET", `/v1/images/${ids[0]}/pose_prior`)).json).toEqual(body);
    expect((await call("GET", `/v1/datasets/${did}/pose_priors`)).json).toEqual({ pose_priors: { [ids[0]!]: body } });
    // Optional members default as the schema says (gps altitude and accuracy null when absent).
    const minimal = await expectStatus(call("PUT", `/v1/images/${ids[1]}/pose_prior`, prior({ gps: { latitude: 1, longitude: 2 } })), 200);
    expect(minimal.json.gps).toEqual({ latitude: 1, longitude: 2, altitude: null, horizontal_accuracy_m: null });
    await expectStatus(call("DELETE", `/v1/images/${ids[1]}/pose_prior`), 204);
    expect((await call("GET", `/v1/images/${ids[1]}/pose_prior`)).json).toBeNull();
    // Deleting a prior the image does not have leaves it without one.
    await expectStatus(call("DELETE", `/v1/images/${ids[1]}/pose_prior`), 204);
  });

  it("timestamps beyond 2^53 (Unix time in nanoseconds) keep every digit, in the prior and its IMU sample", async () => {
    const text = `{"cam_from_world":{"rotation":{"w":1,"x":0,"y":0,"z":0},"translation":[0,0,0]},"timestamp_ns":1700000000000000123,"imu":{"timestamp_ns":1700000000000000099,"gyro":[0,0,0],"accel":[0,0,9.81]}}`;
    const put = await fetchRaw("PUT", `/v1/images/${ids[2]}/pose_prior`, text);
    expect(put.status).toBe(200);
    for (const t of [
      await put.text(),
      await (await fetchRaw("GET", `/v1/images/${ids[2]}/pose_prior`)).text(),
      await (await fetchRaw("GET", `/v1/datasets/${did}/pose_priors`)).text(),
    ]) {
      expect(t).toContain(`"timestamp_ns":1700000000000000123`);
      expect(t).toContain(`"timestamp_ns":1700000000000000099`);
    }
  });

  it("malformed priors answer 422 naming the field, and write nothing", async () => {
    const { ids } = await imagesOf(1);
    const put = (body: unknown) => call("PUT", `/v1/images/${ids[0]}/pose_prior`, body);
    const asymmetric = identity6.slice();
    asymmetric[1] = 0.5;
    const indefinite = identity6.map((v, k) => (k === 0 ? -1 : v));
    const cases: [unknown, string][] = [
      [{}, "cam_from_world"],
      [prior({ cam_from_world: { rotation: { w: 1, x: 1, y: 0, z: 0 }, translation: [0, 0, 0] } }), "cam_from_world.rotation"],
      [prior({ cam_from_world: { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [0, 0] } }), "cam_from_world.translation"],
      [prior({ cam_from_world: { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [0, "1", 0] } }), "cam_from_world.translation.1"],
      [prior({ covariance: identity6.slice(1) }), "covariance"],
      [prior({ covariance: asymmetric }), "covariance"],
      [prior({ covariance: indefinite }), "covariance"],
      [prior({ gps: { latitude: 91, longitude: 0 } }), "gps.latitude"],
      [prior({ gps: { latitude: 0, longitude: 0, horizontal_accuracy_m: -1 } }), "gps.horizontal_accuracy_m"],
      [prior({ timestamp_ns: 1.5 }), "timestamp_ns"],
      [prior({ timestamp_ns: "soon" }), "timestamp_ns"],
      [prior({ imu: { timestamp_ns: 1, gyro: [0, 0], accel: [0, 0, 0] } }), "imu.gyro"],
      [prior({ imu: { gyro: [0, 0, 0], accel: [0, 0, 0] } }), "imu.timestamp_ns"],
    ];
    for (const [body, path] of cases) expectFieldError(await put(body), path);
    // Numbers JSON cannot carry finitely (1e999 parses to Infinity).
    const infinite = await fetchRaw(
      "PUT",
      `/v1/images/${ids[0]}/pose_prior`,
      `{"cam_from_world":{"rotation":{"w":1,"x":0,"y":0,"z":0},"translation":[1e999,0,0]}}`,
    );
    expect(infinite.status).toBe(422);
    expectProblem(
      await call("PUT", `/v1/images/${ids[0]}/pose_prior`, "{not json", { "Content-Type": "application/json" }),
      400,
      "bad_request",
    );
    expect((await call("GET", `/v1/images/${ids[0]}/pose_prior`)).json).toBeNull();
  });

  it("an unknown image or dataset answers 404 on every route", async () => {
    for (const method of ["GET", "PUT", "DELETE"]) {
      expectProblem(await call(method, `/v1/images/${ABSENT}/pose_prior`, method === "PUT" ? prior() : undefined), 404, "not_found");
    }
    expectProblem(await call("GET", `/v1/datasets/${ABSENT}/pose_priors`), 404, "not_found");
    expectProblem(await call("PUT", `/v1/datasets/${ABSENT}/pose_priors`, {}), 404, "not_found");
  });

  it("bulk writes up to 1000 priors, all or none: {written: N}; 1001 or a foreign image id are refused with nothing written", async () => {
    const { did, ids } = await imagesOf(2);
    const other = await imagesOf(1);
    const r = await expectStatus(
      call("PUT", `/v1/datasets/${did}/pose_priors`, { [ids[0]!]: prior(), [ids[1]!]: prior({ timestamp_ns: 5 }) }),
      200,
    );
    expect(r.json).toEqual({ written: 2 });
    expect(Object.keys((await call("GET", `/v1/datasets/${did}/pose_priors`)).json.pose_priors).sort()).toEqual([...ids].sort());
    expect((await call("GET", `/v1/images/${ids[1]}/pose_prior`)).json.timestamp_ns).toBe(5);

    const foreign = await call("PUT", `/v1/datasets/${did}/pose_priors`, {
      [ids[0]!]: prior({ timestamp_ns: 9 }),
      [other.ids[0]!]: prior(),
      [ABSENT]: prior(),
    });
    expectFieldError(foreign, other.ids[0]!, "unknown_image");
    expectFieldError(foreign, ABSENT, "unknown_image");
    expect((await call("GET", `/v1/images/${ids[0]}/pose_prior`)).json.timestamp_ns).toBeUndefined();
    expect((await call("GET", `/v1/images/${other.ids[0]}/pose_prior`)).json).toBeNull();

    const many = Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`IMG${String(i).padStart(23, "0")}`, prior()]));
    expectProblem(await call("PUT", `/v1/datasets/${did}/pose_priors`, many), 422, "validation");
    const bad = await call("PUT", `/v1/datasets/${did}/pose_priors`, { [ids[0]!]: prior({ covariance: [1] }) });
    expectFieldError(bad, `${ids[0]}.covariance`);
    delete many[Object.keys(many)[0]!];
    // 1000 priors pass validation (here they then name unknown images).
    expectFieldError(await call("PUT", `/v1/datasets/${did}/pose_priors`, many), Object.keys(many)[0]!, "unknown_image");
  });

  it("go with their image, and with their dataset", async () => {
    const { pid, did, ids } = await imagesOf(2);
    await expectStatus(call("PUT", `/v1/datasets/${did}/pose_priors`, { [ids[0]!]: prior(), [ids[1]!]: prior() }), 200);
    await expectStatus(call("DELETE", `/v1/images/${ids[0]}`), 204);
    expect(await priorRows("image_id = ?", ids[0]!)).toBe(0);
    expect(Object.keys((await call("GET", `/v1/datasets/${did}/pose_priors`)).json.pose_priors)).toEqual([ids[1]]);
    await expectStatus(call("DELETE", `/v1/projects/${pid}/datasets/${did}`), 204);
    expect(await priorRows("dataset_id = ?", did)).toBe(0);
  });

  it("another tenant's images and datasets are absent (404), and their priors unreachable", async () => {
    const [mine, theirs] = (await tenantCallers("default", "other-co")) as [Call, Call];
    await expectStatus(mine("PUT", `/v1/images/${ids[0]}/pose_prior`, prior()), 200);
    expect((await mine("GET", `/v1/images/${ids[0]}/pose_prior`)).json).toEqual(prior());
    for (const method of ["GET", "PUT", "DELETE"]) {
      expectProblem(await theirs(method, `/v1/images/${ids[0]}/pose_prior`, method === "PUT" ? prior() : undefined), 404, "not_found");
    }
    expectProblem(await theirs("GET", `/v1/datasets/${did}/pose_priors`), 404, "not_found");
    expectProblem(await theirs("PUT", `/v1/datasets/${did}/pose_priors`, { [ids[0]!]: prior() }), 404, "not_found");
    expect((await mine("GET", `/v1/images/${ids[0]}/pose_prior`)).json).toEqual(prior());
  });
});

describe("EXIF GPS as image metadata", () => {
  it("is read at finalize and shown as the image's x-gps (GpsCoord); null without EXIF GPS", async () => {
    const { did } = await newDataset();
    const lund = await expectStatus(
      call("POST", `/v1/datasets/${did}/images`, { name: "lund.jpg", blob_sha: await uploadBlob(LUND_01) }),
      201,
    );
    expect(lund.json["x-gps"]).toEqual({
      latitude: expect.closeTo(55.69817, 5),
      longitude: expect.closeTo(13.19539, 5),
      altitude: 37,
      horizontal_accuracy_m: null,
    });
    const sacre = await expectStatus(
      call("POST", `/v1/datasets/${did}/images`, { name: "sacre.jpg", blob_sha: await uploadBlob(SACRE_COEUR) }),
      201,
    );
    expect(sacre.json["x-gps"]).toBeNull();
    expect((await call("GET", `/v1/images/${lund.json.image_id}/exif`)).json.gps).toEqual(lund.json["x-gps"]);
    const doc = (await call("GET", "/openapi.json")).json;
    expect(Object.keys(doc.components.schemas.GpsCoord.properties)).toEqual(["latitude", "longitude", "altitude", "horizontal_accuracy_m"]);
  });
});

describe("priors in the leased dataset", () => {
  it("each image carries its pose prior and its EXIF GPS to the runner", async () => {
    const { did } = await newDataset();
    const lund = (
      await expectStatus(call("POST", `/v1/datasets/${did}/images`, { name: "lund.jpg", blob_sha: await uploadBlob(LUND_01) }), 201)
    ).json;
    const sacre = (
      await expectStatus(call("POST", `/v1/datasets/${did}/images`, { name: "sacre.jpg", blob_sha: await uploadBlob(SACRE_COEUR) }), 201)
    ).json;
    await expectStatus(call("PUT", `/v1/images/${sacre.image_id}/pose_prior`, prior({ timestamp_ns: 7 })), 200);
    await expectStatus(call("POST", `/v1/datasets/${did}/features`, { spec: {} }), 202);
    const runner = new DigestRunner({ base: BASE, fetch: selfFetch, name: "priors" });
    await runner.register();
    const images = (await runner.lease())!.inputs.dataset!.images;
    expect(images.find((i) => i.name === "lund.jpg")).toMatchObject({ gps: lund["x-gps"], pose_prior: null });
    expect(images.find((i) => i.name === "sacre.jpg")).toMatchObject({ gps: null, pose_prior: prior({ timestamp_ns: 7 }) });
  });
});

describe("priors in task cache keys and reconstruction identity (3.2 rule 1, 2.7)", () => {
  it("changing a prior changes the match (sequential) and map keys and the reconstruction, never the extract key", async () => {
    const { pid, did, ids } = await imagesOf(2);
    const submit = async () => {
      const r = await expectStatus(
        call("POST", `/v1/projects/${pid}/pipelines/incremental`, {
          dataset_id: did,
          spec: { kind: "incremental" },
          pairs: { strategy: "sequential" },
        }),
        202,
      );
      const job = (await call("GET", `/v1/jobs/${r.json.job_id}`)).json;
      await expectStatus(call("POST", `/v1/jobs/${r.json.job_id}:cancel`), 200);
      return {
        recon: r.json.recon_id as string,
        keys: Object.fromEntries(job.tasks.map((t: { kind: string; cache_key: string }) => [t.kind, t.cache_key])),
      };
    };
    const none = await submit();
    await expectStatus(call("PUT", `/v1/images/${ids[0]}/pose_prior`, prior({ timestamp_ns: 2 })), 200);
    const first = await submit();
    await expectStatus(call("PUT", `/v1/images/${ids[0]}/pose_prior`, prior({ timestamp_ns: 1 })), 200);
    const second = await submit();
    const again = await submit();
    for (const [a, b] of [
      [none, first],
      [first, second],
    ] as const) {
      expect(a.keys.extract).toBe(b.keys.extract);
      expect(a.keys.verify).not.toBe(b.keys.verify);
      expect(a.keys.match).not.toBe(b.keys.match);
      expect(a.keys.map).not.toBe(b.keys.map);
      expect(a.recon).not.toBe(b.recon);
    }
    expect(again).toEqual(second);
  });
});

/** A request with a literal JSON body, answered as a raw Response (to read the bytes as sent). */
function fetchRaw(method: string, path: string, body?: string) {
  return SELF.fetch(`${BASE}${path}`, { method, body, headers: body ? { "Content-Type": "application/json" } : {} });
}
