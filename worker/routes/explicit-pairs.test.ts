import { afterEach, describe, expect, it, vi } from "vitest";
import type { TaskKind } from "../../protocol";
import { MAX_PAIR_LIST_BYTES } from "../../protocol/wire/pairs";
import { DigestRunner } from "../../scripts/digest-runner";
import {
  BASE,
  call,
  expectFieldError,
  expectProblem,
  expectStatus,
  newDataset,
  selfFetch,
  uploadBlob,
  cancelLiveJobs,
} from "../test/helpers";

// Whole jobs run through the Durable Objects; slow on a loaded machine.
vi.setConfig({ testTimeout: 60_000 });

const NAMES = ["f0.jpg", "f1.jpg", "f2.jpg", "dir/f3.jpg", "f4.jpg"];
const text = (s: string) => new TextEncoder().encode(s);

/** A dataset of NAMES (distinct bytes each; the digest runner reads them, no decoder does). */
async function dataset() {
  const { pid, did } = await newDataset();
  for (const name of NAMES) {
    const sha = await uploadBlob(text(`explicit ${name} ${Math.random()}`));
    await expectStatus(call("POST", `/v1/datasets/${did}/images`, { name, blob_sha: sha }), 201);
  }
  return { pid, did };
}

const pipeline = (pid: string, did: string, pairs: Record<string, unknown>) =>
  call("POST", `/v1/projects/${pid}/pipelines/incremental`, { dataset_id: did, spec: { kind: "incremental" }, pairs });

const jobCount = async () => (await call("GET", "/v1/jobs?page_size=1")).json.total as number;

const runner = async (stages: TaskKind[]) => {
  const r = new DigestRunner({ base: BASE, fetch: selfFetch, name: "explicit", stages });
  await r.register();
  return r;
};

/** The job's extraction done by a digest runner, then its match shard as a matcher leases it. */
async function matchLease() {
  await (await runner(["extract"])).drain();
  const r = await runner(["match"]);
  return { r, lease: (await r.lease())! };
}

const pair = (image_name1: string, image_name2: string) => ({ image_name1, image_name2 });

afterEach(cancelLiveJobs);

describe("explicit pairs (2.12 PairsSpec explicit, 4.6 rule 5)", () => {
  it("are advertised", async () => {
    expect((await call("GET", "/v1/capabilities")).json.features["pairs.explicit"]).toBe(true);
  });

  it("image_pairs: 202; duplicates (a b, b a) are one pair and the match shard reads the listed images alone", async () => {
    const { pid, did } = await dataset();
    const image_pairs = [pair("f0.jpg", "f1.jpg"), pair("f1.jpg", "f0.jpg"), pair("dir/f3.jpg", "f2.jpg"), pair("f0.jpg", "f1.jpg")];
    const job = await expectStatus(pipeline(pid, did, { strategy: "explicit", image_pairs }), 202);
    const { lease } = await matchLease();
    expect(lease.task).toMatchObject({ job_id: job.json.job_id, kind: "match", params: { pairs: { strategy: "explicit", image_pairs } } });
    expect(new Set(lease.shard!.items.flatMap((it) => it.images))).toEqual(new Set(["f0.jpg", "f1.jpg", "f2.jpg", "dir/f3.jpg"]));
  });

  it("pairs_blob_sha: 202; the job holds the upload and its match lease reads it", async () => {
    const { pid, did } = await dataset();
    const bytes = text("# two pairs\nf0.jpg f4.jpg\r\n\nf4.jpg\tf0.jpg\nf1.jpg f2.jpg\n");
    const sha = await uploadBlob(bytes);
    const job = await expectStatus(pipeline(pid, did, { strategy: "explicit", pairs_blob_sha: sha }), 202);
    const { r, lease } = await matchLease();
    expect(lease.task).toMatchObject({ job_id: job.json.job_id, params: { pairs: { strategy: "explicit", pairs_blob_sha: sha } } });
    expect(new Set(lease.shard!.items.flatMap((it) => it.images))).toEqual(new Set(["f0.jpg", "f1.jpg", "f2.jpg", "f4.jpg"]));
    expect(new Uint8Array(await r.client.readBlob(lease.lease_id, sha))).toEqual(bytes);
  });

  it("each bad list is 422 naming its row (index or line), and no job is created", async () => {
    const { pid, did } = await dataset();
    const before = await jobCount();
    const inline = async (image_pairs: unknown[], path: string, code: string) => {
      const r = await pipeline(pid, did, { strategy: "explicit", image_pairs });
      expectFieldError(r, path, code);
      return r;
    };
    const unknown = await inline(
      [pair("f0.jpg", "f1.jpg"), pair("f0.jpg", "nope.jpg")],
      "pairs.image_pairs[1].image_name2",
      "unknown_image",
    );
    expect(unknown.json.detail).toContain("pairs.image_pairs[1].image_name2: no image named 'nope.jpg'");
    await inline([pair("f2.jpg", "f2.jpg")], "pairs.image_pairs[0]", "self_pair");
    await inline([], "pairs.image_pairs", "empty_pair_list");

    const byBlob = async (body: string | Uint8Array, code: string, line?: number) => {
      const sha = await uploadBlob(typeof body === "string" ? text(body) : body);
      const r = await pipeline(pid, did, { strategy: "explicit", pairs_blob_sha: sha });
      expectFieldError(r, "pairs.pairs_blob_sha", code);
      if (line) expect(r.json.errors[0].message).toMatch(new RegExp(`^line ${line}: `));
      return r;
    };
    const malformed = await byBlob("f0.jpg f1.jpg\nf0.jpg f1.jpg f2.jpg\nf4.jpg\n", "malformed_pair_row", 2);
    expect(malformed.json.errors.map((e: { message: string }) => e.message)).toEqual([
      "line 2: expected two image names, found 3",
      "line 3: expected two image names, found 1",
    ]);
    await byBlob("f0.jpg f1.jpg\n\nf1.jpg missing.jpg\n", "unknown_image", 3);
    await byBlob("f4.jpg f4.jpg\n", "self_pair", 1);
    await byBlob("# nothing\n\n", "empty_pair_list");
    await byBlob(new Uint8Array([0x66, 0x30, 0xff, 0x20, 0x66, 0x31]), "not_a_pair_list");
    expectFieldError(
      await pipeline(pid, did, { strategy: "explicit", pairs_blob_sha: "0".repeat(64) }),
      "pairs.pairs_blob_sha",
      "unknown_pairs_blob",
    );
    // Exactly one of the two (2.12).
    expectProblem(await pipeline(pid, did, { strategy: "explicit" }), 422, "validation");
    expectProblem(
      await pipeline(pid, did, { strategy: "explicit", image_pairs: [pair("f0.jpg", "f1.jpg")], pairs_blob_sha: "0".repeat(64) }),
      422,
      "validation",
    );
    // The matches stage checks the same way, before its inputs.
    expectFieldError(
      await call("POST", `/v1/datasets/${did}/matches`, { pairs: { strategy: "explicit", image_pairs: [pair("f0.jpg", "x")] } }),
      "pairs.image_pairs[0].image_name2",
      "unknown_image",
    );
    expect(await jobCount()).toBe(before);
  });

  it(`an uploaded list over ${MAX_PAIR_LIST_BYTES} bytes is 422 pair_list_too_large, unread`, async () => {
    const { pid, did } = await dataset();
    const before = await jobCount();
    const big = new Uint8Array(MAX_PAIR_LIST_BYTES + 1).fill(0x20);
    const sha = await uploadBlob(big);
    expectFieldError(
      await pipeline(pid, did, { strategy: "explicit", pairs_blob_sha: sha }),
      "pairs.pairs_blob_sha",
      "pair_list_too_large",
    );
    expect(await jobCount()).toBe(before);
  });
});
