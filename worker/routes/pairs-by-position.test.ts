import { describe, expect, it } from "vitest";
import { call, expectFieldError, expectProblem, expectStatus, newDataset, uploadBlob } from "../test/helpers";
import { LUND_01, LUND_02 } from "../test/photos";

const prior = (x: number) => ({ cam_from_world: { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [x, 0, 0] } });

/** A dataset of the given photos (or distinct non-photo bytes), answering its image ids. */
async function datasetOf(photos: (Uint8Array | null)[]) {
  const { pid, did } = await newDataset();
  const ids: string[] = [];
  for (const [i, photo] of photos.entries()) {
    const sha = await uploadBlob(photo ?? new TextEncoder().encode(`positioned ${i} ${Math.random()}`));
    ids.push((await expectStatus(call("POST", `/v1/datasets/${did}/images`, { name: `f${i}.jpg`, blob_sha: sha }), 201)).json.image_id);
  }
  return { pid, did, ids };
}

const pipeline = (pid: string, did: string, pairs: Record<string, unknown>) =>
  call("POST", `/v1/projects/${pid}/pipelines/incremental`, { dataset_id: did, spec: { kind: "incremental" }, pairs });

const jobsOf = async (pid: string) =>
  (await call("GET", "/v1/jobs?page_size=500")).json.items.filter((j: { project_id: string }) => j.project_id === pid);

describe("pairs by position (2.12 spatial, from_poses)", () => {
  it("are advertised", async () => {
    const features = (await call("GET", "/v1/capabilities")).json.features;
    expect(features["pairs.spatial"]).toBe(true);
    expect(features["pairs.from_poses"]).toBe(true);
  });

  it("422 positions_missing without two placed images, and no job is created", async () => {
    const { pid, did, ids } = await datasetOf([null, null]);
    for (const pairs of [{ strategy: "spatial" }, { strategy: "from_poses", overlap_distance_m: 5, max_angle_deg: 30 }]) {
      const r = await pipeline(pid, did, pairs);
      expectProblem(r, 422, "validation");
      expectFieldError(r, "pairs.strategy", "positions_missing");
    }
    // One prior is not enough either.
    await expectStatus(call("PUT", `/v1/images/${ids[0]}/pose_prior`, prior(0)), 200);
    expectProblem(await pipeline(pid, did, { strategy: "spatial" }), 422, "validation");
    expect(await jobsOf(pid)).toHaveLength(0);
  });

  it("accept a dataset whose images have pose priors (both strategies) or EXIF GPS (spatial only)", async () => {
    const posed = await datasetOf([null, null]);
    await expectStatus(call("PUT", `/v1/datasets/${posed.did}/pose_priors`, { [posed.ids[0]!]: prior(0), [posed.ids[1]!]: prior(1) }), 200);
    const jobs = [
      await expectStatus(pipeline(posed.pid, posed.did, { strategy: "spatial", overlap_distance_m: 2 }), 202),
      await expectStatus(pipeline(posed.pid, posed.did, { strategy: "from_poses", overlap_distance_m: 2, max_angle_deg: 20 }), 202),
    ];
    // The pairs are chosen on a runner by the match task's first shard; the blocks holding them are planned from its list.
    for (const { json } of jobs) {
      const tasks = (await call("GET", `/v1/jobs/${json.job_id}`)).json.tasks as { kind: string; "x-shards": unknown }[];
      expect(tasks.find((t) => t.kind === "match")!["x-shards"]).toMatchObject({ total: 1, items: 1 });
      expect(tasks.find((t) => t.kind === "verify")!["x-shards"]).toBeNull();
    }

    const located = await datasetOf([LUND_01, LUND_02]);
    const images = (await call("GET", `/v1/datasets/${located.did}/images`)).json.items;
    expect(images.every((i: { "x-gps": unknown }) => i["x-gps"])).toBe(true);
    await expectStatus(pipeline(located.pid, located.did, { strategy: "spatial", overlap_distance_m: 30 }), 202);
    const fromPoses = await pipeline(located.pid, located.did, { strategy: "from_poses" });
    expectProblem(fromPoses, 422, "validation");
    expectFieldError(fromPoses, "pairs.strategy", "positions_missing");
  });
});
