// The measures and decision rules of services/validation.ts on real wire formats: float results
// within the device tolerance agree, tampered ones do not; the rules decide who is right.
import { describe, expect, it } from "vitest";
import type { ArtifactDescriptor, TaskOutputs } from "../../protocol";
import {
  FEATURES_FORMAT,
  MATCHES_FORMAT,
  VERIFIED_MATCHES_FORMAT,
  DescriptorKind,
  encodeFeatures,
  encodeMatches,
} from "../../protocol/wire";
import type { ShardContext, ShardResult } from "../storage/job-rows";
import { type Compared, type ValidationPolicy, compareOutputs, decide, replicates, structureErrors } from "./validation";

const policy: ValidationPolicy = { rate: 1, trustAfter: 20, keypointAgreement: 0.95, descriptorL1: 16, matchAgreement: 0.9 };

/** A seeded pseudo-random stream (tests must not depend on Math.random). */
function random(seed: number) {
  return () => (seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32;
}

function features(n: number, jitter: (k: number, v: number) => number = (_k, v) => v) {
  const rnd = random(7);
  const keypoints = new Float32Array(4 * n);
  for (let i = 0; i < n; i++) keypoints.set([10 + 620 * rnd(), 10 + 460 * rnd(), 1 + 4 * rnd(), 6 * rnd() - 3], 4 * i);
  const descriptors = Uint8Array.from({ length: 128 * n }, () => Math.floor(200 * rnd()));
  return { keypoints: keypoints.map((v, k) => jitter(k, v)), descriptors };
}

const encode = (f: { keypoints: Float32Array; descriptors: Uint8Array }) =>
  encodeFeatures({ imageWidth: 640, imageHeight: 480, descriptorDim: 128, descriptorKind: DescriptorKind.siftL1Root, ...f });

/** A store of blobs by name, and outputs of one item per file (as a shard's result). */
function results(format: string, files: Record<string, Uint8Array>) {
  const read = async (sha: string) => files[sha]!;
  const outputs = (...names: string[]): TaskOutputs => ({
    artifacts: names.map((name, i): ArtifactDescriptor => ({
      kind: "x",
      name: "x",
      uri: null,
      artifact_format: format,
      schema_version: 1,
      media_type: "application/octet-stream",
      summary: {},
      metadata: {},
      files: [{ path: `item${i}`, blob_sha: name, byte_size: files[name]!.byteLength }],
    })),
    result: null,
  });
  return { read, outputs };
}

describe("compareOutputs", () => {
  it("features: sub-pixel jitter and a few descriptor levels (another device's SIFT) agree; moved or dropped keypoints do not", async () => {
    const base = features(800);
    const device = {
      keypoints: features(800, (k, v) => (k % 4 < 2 ? v + 0.004 : v)).keypoints,
      descriptors: base.descriptors.map((d, i) => (i % 64 === 0 ? d + 2 : d)),
    };
    const moved = features(800, (k, v) => (k % 4 < 2 && k < 4 * 200 ? v + 3 : v));
    const dropped = { keypoints: base.keypoints.slice(0, 4 * 700), descriptors: base.descriptors.slice(0, 128 * 700) };
    const noise = { keypoints: base.keypoints, descriptors: base.descriptors.map((d, i) => (i % 2 ? 255 - d : d)) };
    const { read, outputs } = results(FEATURES_FORMAT, {
      base: encode(base),
      device: encode(device),
      moved: encode(moved),
      dropped: encode(dropped),
      noise: encode(noise),
    });

    expect(await compareOutputs(read, outputs("base"), outputs("base"), policy)).toEqual({ agrees: true, measure: "identical bytes" });
    const close = await compareOutputs(read, outputs("base"), outputs("device"), policy);
    expect(close).toMatchObject({ agrees: true });
    expect(close.measure).toMatch(/within tolerance/);
    const far = await compareOutputs(read, outputs("base"), outputs("moved"), policy);
    expect(far.agrees).toBe(false);
    expect(far.measure).toMatch(/^item0: 75\.0% of keypoints agree \(95% needed\)/);
    expect((await compareOutputs(read, outputs("dropped"), outputs("base"), policy)).agrees).toBe(false);
    expect((await compareOutputs(read, outputs("base"), outputs("noise"), policy)).measure).toMatch(
      /100\.0% of keypoints agree .*mean descriptor L1 \d+/,
    );
    expect((await compareOutputs(read, outputs("base"), outputs("noise"), policy)).agrees).toBe(false);
    // Every item must agree: one bad item of two is a disagreement, named by its path.
    expect(await compareOutputs(read, outputs("base", "base"), outputs("base", "moved"), policy)).toMatchObject({
      agrees: false,
      measure: expect.stringMatching(/^item1: /),
    });
  });

  it("matches: by their common pairs over all image pairs; a missing pair counts against", async () => {
    const pair = (n: number, shift = 0) => Uint32Array.from({ length: 2 * n }, (_, k) => (k % 2 ? k + shift : k));
    const file = (a: Uint32Array, b?: Uint32Array) =>
      encodeMatches([
        { imageName1: "a.jpg", imageName2: "b.jpg", matches: a },
        ...(b ? [{ imageName1: "a.jpg", imageName2: "c.jpg", matches: b }] : []),
      ]);
    const { read, outputs } = results(MATCHES_FORMAT, {
      one: file(pair(100), pair(100)),
      // 3 of 100 matches of one pair differ: 197 / 203 common.
      near: file(
        Uint32Array.from(pair(100), (v, k) => (k % 2 && k < 6 ? v + 1000 : v)),
        pair(100),
      ),
      half: file(pair(100), pair(100, 1)),
      missing: file(pair(100)),
    });
    expect((await compareOutputs(read, outputs("one"), outputs("near"), policy)).agrees).toBe(true);
    expect((await compareOutputs(read, outputs("one"), outputs("half"), policy)).measure).toMatch(/33\.3% of matches agree/);
    expect((await compareOutputs(read, outputs("one"), outputs("missing"), policy)).agrees).toBe(false);
  });

  it("verified matches: inlier lists per pair and type; another type is a disagreement", async () => {
    const file = (type: string, inliers: [number, number][]) =>
      new TextEncoder().encode(
        JSON.stringify({
          pairs: [{ image_id1: 1, image_id2: 2, type, num_inliers: inliers.length, F: null, E: null, H: null, inlier_matches: inliers }],
          "x-images": [],
        }),
      );
    const inliers = Array.from({ length: 50 }, (_, i): [number, number] => [i, i + 1]);
    const { read, outputs } = results(VERIFIED_MATCHES_FORMAT, {
      a: file("calibrated", inliers),
      b: file("calibrated", [...inliers.slice(0, 49), [999, 999]]),
      c: file("planar", inliers),
    });
    expect((await compareOutputs(read, outputs("a"), outputs("b"), policy)).agrees).toBe(true);
    expect((await compareOutputs(read, outputs("a"), outputs("c"), policy)).agrees).toBe(false);
  });

  it("a format without a tolerance must match byte for byte; an undecodable file disagrees", async () => {
    const { read, outputs } = results("testrunner.image_digests.v1", { a: new Uint8Array([1]), b: new Uint8Array([2]) });
    expect((await compareOutputs(read, outputs("a"), outputs("b"), policy)).measure).toMatch(/has no tolerance/);
    const broken = results(FEATURES_FORMAT, { a: encode(features(10)), b: new Uint8Array([1, 2, 3]) });
    expect((await compareOutputs(broken.read, broken.outputs("a"), broken.outputs("b"), policy)).measure).toMatch(/^item0: undecodable/);
  });
});

describe("replicates", () => {
  it("every result of a token with fewer confirmed results than trustAfter; then a share of `rate`", () => {
    const p = { ...policy, rate: 0.25, trustAfter: 3 };
    expect([0, 1, 2].map((confirmed) => replicates(p, confirmed, 0.99))).toEqual([true, true, true]);
    expect(replicates(p, 3, 0.2)).toBe(true);
    expect(replicates(p, 3, 0.3)).toBe(false);
    expect(replicates({ ...p, rate: 1 }, 100, 0.999)).toBe(true);
  });
});

describe("decide", () => {
  const outputs: TaskOutputs = { artifacts: [], result: null };
  const result = (id: number, trusted: boolean): ShardResult => ({
    result_id: id,
    runner_id: `r${id}`,
    principal: `p${id}`,
    trusted,
    outputs,
  });
  const compared = (id: number, agrees: boolean): Compared => ({
    ...result(id, false),
    agreement: { agrees, measure: agrees ? "same" : "40% of keypoints agree" },
  });

  it("an untrusted result agreeing with an open one confirms it; disagreeing, a trusted runner must decide", () => {
    expect(decide("s", result(2, false), [compared(1, true)])).toEqual({
      verdicts: [
        { result_id: 1, verdict: "validated" },
        { result_id: 2, verdict: "agreed" },
      ],
      use: 1,
      need: "any",
      warnings: [],
    });
    const dispute = decide("s", result(2, false), [compared(1, false)]);
    expect(dispute).toMatchObject({ use: null, need: "trusted", verdicts: [{ result_id: 2, verdict: "candidate" }] });
    expect(dispute.warnings[0]).toMatch(
      /untrusted runner r1 and untrusted runner r2 disagree \(40% of keypoints agree\); a trusted runner decides/,
    );
  });

  it("a trusted result decides: those agreeing are confirmations, the others rejected", () => {
    const j = decide("s", result(3, true), [compared(1, true), compared(2, false)]);
    expect(j.use).toBe(3);
    expect(j.verdicts).toEqual([
      { result_id: 3, verdict: "validated" },
      { result_id: 1, verdict: "agreed" },
      { result_id: 2, verdict: "rejected" },
    ]);
    expect(j.warnings).toEqual([
      "shard s: the result of untrusted runner r2 disagrees with trusted runner r3's (40% of keypoints agree); it is discarded and the runner quarantined",
    ]);
  });
});

describe("structureErrors", () => {
  const kp = encode(features(10));
  const files: Record<string, Uint8Array> = { fa: kp, fb: kp, fc: kp };
  const read = async (sha: string) => files[sha]!;
  const readHead = async (sha: string) => ({ head: files[sha]!.subarray(0, 32), size: files[sha]!.byteLength });
  const item = (path: string, block: [string[], string[]] | null, images: string[]) => ({ key: "0".repeat(64), path, images, block });
  const context = (kind: ShardContext["kind"], items: ShardContext["items"]): ShardContext => ({
    kind,
    items,
    images: ["a.jpg", "b.jpg", "c.jpg"].map((name) => ({ name, width: 640, height: 480 })),
    features: [
      { name: "a.jpg", blob_sha: "fa" },
      { name: "b.jpg", blob_sha: "fb" },
      { name: "c.jpg", blob_sha: "fc" },
    ],
  });
  const outputs = (format: string, bytes: Uint8Array, summary: Record<string, unknown> = {}): TaskOutputs => {
    files.out = bytes;
    return {
      artifacts: [
        {
          kind: "x",
          name: "x",
          uri: null,
          artifact_format: format,
          schema_version: 1,
          media_type: "x",
          summary,
          metadata: {},
          files: [{ path: "p", blob_sha: "out", byte_size: bytes.byteLength }],
        },
      ],
      result: null,
    };
  };

  it("features: decodable, with the keypoint count the summary states", async () => {
    const ctx = context("extract", [item("features/a.jpg", null, ["a.jpg"])]);
    expect(await structureErrors(read, readHead, ctx, outputs(FEATURES_FORMAT, kp, { num_keypoints: 10 }))).toEqual([]);
    expect((await structureErrors(read, readHead, ctx, outputs(FEATURES_FORMAT, kp, { num_keypoints: 11 })))[0]).toMatchObject({
      code: "summary_mismatch",
    });
    expect((await structureErrors(read, readHead, ctx, outputs(FEATURES_FORMAT, kp.subarray(0, 40))))[0]).toMatchObject({
      code: "invalid_file",
    });
  });

  it("a trusted result's features by their header only: count and size checked, keypoint values not read", async () => {
    const ctx = context("extract", [item("features/a.jpg", null, ["a.jpg"])]);
    const whole = async () => {
      throw new Error("a trusted result's features are not read whole");
    };
    const header = { headerOnly: true };
    expect(await structureErrors(whole, readHead, ctx, outputs(FEATURES_FORMAT, kp, { num_keypoints: 10 }), header)).toEqual([]);
    expect((await structureErrors(whole, readHead, ctx, outputs(FEATURES_FORMAT, kp, { num_keypoints: 11 }), header))[0]).toMatchObject({
      code: "summary_mismatch",
    });
    // A size that disagrees with the header's count and descriptor dimension.
    expect((await structureErrors(whole, readHead, ctx, outputs(FEATURES_FORMAT, kp.subarray(0, 40)), header))[0]).toMatchObject({
      code: "invalid_file",
    });
    // A non-finite keypoint passes the header check (a volunteer's full read catches it).
    const nan = kp.slice();
    new DataView(nan.buffer).setFloat32(32, NaN, true);
    expect(await structureErrors(whole, readHead, ctx, outputs(FEATURES_FORMAT, nan), header)).toEqual([]);
    expect((await structureErrors(read, readHead, ctx, outputs(FEATURES_FORMAT, nan)))[0]).toMatchObject({ code: "invalid_file" });
  });

  it("matches and verified matches: pairs inside the item's block, indices inside the images' keypoints", async () => {
    const ctx = (kind: ShardContext["kind"]) => context(kind, [item("m", [["a.jpg"], ["b.jpg", "c.jpg"]], ["a.jpg", "b.jpg", "c.jpg"])]);
    const matches = (n1: string, n2: string, index: number) =>
      encodeMatches([{ imageName1: n1, imageName2: n2, matches: Uint32Array.from([0, index]) }]);
    expect(await structureErrors(read, readHead, ctx("match"), outputs(MATCHES_FORMAT, matches("b.jpg", "a.jpg", 9)))).toEqual([]);
    expect((await structureErrors(read, readHead, ctx("match"), outputs(MATCHES_FORMAT, matches("b.jpg", "c.jpg", 1))))[0]).toMatchObject({
      code: "outside_block",
    });
    expect((await structureErrors(read, readHead, ctx("match"), outputs(MATCHES_FORMAT, matches("a.jpg", "c.jpg", 10))))[0]).toMatchObject({
      code: "index_range",
    });
    const verified = (id2: number, inlier: number) =>
      new TextEncoder().encode(
        JSON.stringify({
          pairs: [
            { image_id1: 1, image_id2: id2, type: "calibrated", num_inliers: 1, F: null, E: null, H: null, inlier_matches: [[0, inlier]] },
          ],
          "x-images": ["a.jpg", "b.jpg", "c.jpg"].map((name, i) => ({ image_id: i + 1, name, resource_id: "r" })),
        }),
      );
    expect(await structureErrors(read, readHead, ctx("verify"), outputs(VERIFIED_MATCHES_FORMAT, verified(3, 9)))).toEqual([]);
    expect((await structureErrors(read, readHead, ctx("verify"), outputs(VERIFIED_MATCHES_FORMAT, verified(3, 99))))[0]).toMatchObject({
      code: "index_range",
    });
    expect((await structureErrors(read, readHead, ctx("verify"), outputs(VERIFIED_MATCHES_FORMAT, verified(7, 0))))[0]).toMatchObject({
      code: "outside_block",
    });
  });
});
