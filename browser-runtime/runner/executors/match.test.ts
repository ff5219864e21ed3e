// The match executor streams a block's images (issue 18, Memory): a block of 48 images (the
// pairs between two content groups of 24) is matched holding the features of at most
// MATCH_HELD_IMAGES images at once, every pair against its own two images' descriptors, and the
// block's file lists its pairs in pair-list order, and so does the block's pair list, the shard's second artifact.
import { describe, expect, it } from "vitest";
import type { Lease } from "../../../protocol";
import { encodeFeatures } from "../../../protocol/wire/features";
import { decodeMatches } from "../../../protocol/wire/matches";
import type { SiftStages } from "../../gpu/select";
import type { OutputFile, TaskContext } from "../task-context";
import { featuresPath } from "./artifact";
import { MATCH_HELD_IMAGES, match } from "./match";

const N = 48;
const names = Array.from({ length: N }, (_, i) => `img${String(i).padStart(2, "0")}.jpg`);

/** Two keypoints per image; every descriptor byte is the image's index. */
const featuresOf = (i: number) =>
  encodeFeatures({
    imageWidth: 64,
    imageHeight: 48,
    descriptorDim: 128,
    descriptorKind: 1,
    keypoints: new Float32Array([1, 1, 1, 0, 2, 2, 1, 0]),
    descriptors: new Uint8Array(256).fill(i),
  });

function context() {
  const blobs = new Map(names.map((_, i) => [`${String(i).padStart(64, "0")}`, featuresOf(i)]));
  const written = new Map<string, Uint8Array>();
  const logs: string[] = [];
  let reads = 0;
  const [groupA, groupB] = [names.filter((_, i) => i % 2 === 0), names.filter((_, i) => i % 2 === 1)];
  const lease = {
    task: { kind: "match" },
    inputs: {
      dataset: { images: names.map((name, i) => ({ name, image_id: `IMG${i}`, content_sha: "0".repeat(64), width: 64, height: 48 })) },
      artifacts: {},
      upstream: [
        {
          kind: "extract",
          outputs_ref: {
            artifacts: [
              {
                kind: "features.local.v1",
                files: names.map((name, i) => ({ path: featuresPath(name), blob_sha: `${String(i).padStart(64, "0")}`, byte_size: 0 })),
              },
            ],
          },
        },
      ],
    },
    shard: { index: 0, count: 1, items: [{ key: "k", path: "matches/0-1.bin", images: names, block: [groupA, groupB] }] },
  } as unknown as Lease;
  const sift = {
    features: "wasm",
    matching: "wasm",
    // One match per pair: keypoint 0 to keypoint 1, tagged by the images its descriptors came from.
    match: async (a: Uint8Array, b: Uint8Array) => new Uint32Array([a[0]!, b[0]!]),
  } as unknown as SiftStages;
  const ctx = {
    lease,
    params: { pairs: { strategy: "exhaustive" }, matcher: {} },
    engines: { lanes: () => 3 },
    sift: async () => sift,
    async read(sha: string) {
      reads += 1;
      return blobs.get(sha)!;
    },
    async write(path: string, bytes: Uint8Array, media_type: string): Promise<OutputFile> {
      written.set(path, bytes);
      return { path, blob_sha: "f".repeat(64), byte_size: bytes.length, media_type };
    },
    progress() {},
    log: (_level: string, message: string) => void logs.push(message),
    metric() {},
    cancelPoint: async () => {},
  } as unknown as TaskContext;
  return { ctx, written, logs, reads: () => reads, groupA, groupB };
}

describe("match executor", () => {
  it("matches a block of 48 images holding at most MATCH_HELD_IMAGES of them, in pair-list order", async () => {
    const { ctx, written, logs, reads, groupA, groupB } = context();
    const outputs = await match(ctx);
    expect(outputs.artifacts.map((a) => [a.kind, a.files[0]!.path])).toEqual([
      ["matches.indexed.v1", "matches/0-1.bin"],
      ["pairs.image_names.v1", "pairs/0-1.txt"],
    ]);
    const pairs = decodeMatches(written.get("matches/0-1.bin")!);
    // Every pair across the two groups, as the exhaustive list orders them.
    const expected = names.flatMap((a, i) =>
      names
        .slice(i + 1)
        .filter((b) => groupA.includes(a) !== groupA.includes(b))
        .map((b) => [a, b]),
    );
    expect(expected).toHaveLength(groupA.length * groupB.length);
    expect(pairs.map((p) => [p.imageName1, p.imageName2])).toEqual(expected);
    for (const p of pairs) expect(Array.from(p.matches)).toEqual([names.indexOf(p.imageName1), names.indexOf(p.imageName2)]);
    // The block's pair list, an artifact of its own: the same pairs in the same order.
    const list = new TextDecoder().decode(written.get("pairs/0-1.txt")!).split("\n");
    expect(list[0]).toBe("# image pairs of matches/0-1.bin");
    expect(list.slice(1, -1)).toEqual(expected.map(([a, b]) => `${a} ${b}`));

    const held = /holding the features of at most (\d+) at once \((\d+) reads\)/.exec(logs.join("\n"));
    expect(held).not.toBeNull();
    expect(Number(held![1])).toBeLessThanOrEqual(MATCH_HELD_IMAGES);
    expect(MATCH_HELD_IMAGES).toBeLessThan(N);
    // Streaming re-reads images, but by tiles: far fewer reads than the 576 pairs.
    expect(reads()).toBe(Number(held![2]));
    expect(reads()).toBeGreaterThanOrEqual(N);
    expect(reads()).toBeLessThan(pairs.length / 3);
  });
});
