// correspondence_graph.json (2.14): the map task writes the match task's raw pairs in dataset image
// ids and sets it as the reconstruction's file; a job given verified matches writes none.
import { describe, expect, it } from "vitest";
import type { Lease } from "../../../protocol";
import { encodeMatches } from "../../../protocol/wire/matches";
import type { OutputFile, TaskContext } from "../task-context";
import { writeCorrespondenceGraph } from "./correspondence-graph";

const images = ["a.jpg", "b.jpg", "c.jpg"].map((name, i) => ({ name, image_id: `IMG${i}`, content_sha: `${i}`.repeat(64) }));

function context(upstream: unknown[]) {
  const blobs = new Map<string, Uint8Array>();
  const written: { path: string; body: unknown }[] = [];
  const set: string[] = [];
  const lease = { inputs: { dataset: { images }, artifacts: {}, upstream } } as unknown as Lease;
  const ctx = {
    lease,
    read: async (sha: string) => blobs.get(sha)!,
    write: async (path: string, bytes: Uint8Array, media_type: string): Promise<OutputFile> => {
      written.push({ path, body: JSON.parse(new TextDecoder().decode(bytes)) });
      return { path, blob_sha: "f".repeat(64), byte_size: bytes.byteLength, media_type };
    },
    reconstructionFile: async (name: string) => (set.push(name), true),
  } as unknown as TaskContext;
  return { ctx, blobs, written, set };
}

describe("correspondence_graph.json", () => {
  it("holds every raw pair of the match blocks in dataset image ids, and is set as the reconstruction's file", async () => {
    const blocks = [
      encodeMatches([{ imageName1: "a.jpg", imageName2: "b.jpg", matches: Uint32Array.from([0, 1, 2, 3]) }]),
      encodeMatches([
        { imageName1: "a.jpg", imageName2: "c.jpg", matches: Uint32Array.from([5, 6]) },
        { imageName1: "b.jpg", imageName2: "c.jpg", matches: new Uint32Array() },
      ]),
    ];
    const files = blocks.map((_, i) => ({
      path: `matches/block-${i}`,
      blob_sha: `${i}`.padStart(64, "b"),
      byte_size: blocks[i]!.byteLength,
    }));
    const upstream = [{ kind: "match", outputs_ref: { artifacts: [{ kind: "matches.indexed.v1", files }] } }];
    const { ctx, blobs, written, set } = context(upstream);
    files.forEach((f, i) => blobs.set(f.blob_sha, blocks[i]!));
    expect(await writeCorrespondenceGraph(ctx)).toMatchObject({ path: "correspondence_graph.json", media_type: "application/json" });
    expect(set).toEqual(["correspondence_graph.json"]);
    expect(written).toEqual([
      {
        path: "correspondence_graph.json",
        body: {
          pairs: [
            {
              image_id1: 1,
              image_id2: 2,
              num_matches: 2,
              matches: [
                [0, 1],
                [2, 3],
              ],
            },
            { image_id1: 1, image_id2: 3, num_matches: 1, matches: [[5, 6]] },
            { image_id1: 2, image_id2: 3, num_matches: 0, matches: [] },
          ],
          "x-images": [
            { image_id: 1, name: "a.jpg", resource_id: "IMG0" },
            { image_id: 2, name: "b.jpg", resource_id: "IMG1" },
            { image_id: 3, name: "c.jpg", resource_id: "IMG2" },
          ],
        },
      },
    ]);
  });

  it("a job that matched nothing itself (given verified matches) writes no graph", async () => {
    const { ctx, written, set } = context([{ kind: "verify", outputs_ref: { artifacts: [] } }]);
    expect(await writeCorrespondenceGraph(ctx)).toBeNull();
    expect([written, set]).toEqual([[], []]);
  });

  it("matches naming an image outside the dataset fail the task", async () => {
    const block = encodeMatches([{ imageName1: "a.jpg", imageName2: "z.jpg", matches: Uint32Array.from([0, 0]) }]);
    const files = [{ path: "matches/block-0", blob_sha: "c".repeat(64), byte_size: block.byteLength }];
    const { ctx, blobs } = context([{ kind: "match", outputs_ref: { artifacts: [{ kind: "matches.indexed.v1", files }] } }]);
    blobs.set(files[0]!.blob_sha, block);
    await expect(writeCorrespondenceGraph(ctx)).rejects.toThrow(/outside the dataset \('a.jpg', 'z.jpg'\)/);
  });
});
