/**
 * @module The reconstruction's `correspondence_graph.json` (spec 2.14: the raw matches per image
 * pair before verification; its inner shape is left open). The map task writes it from the match
 * task's blocks, which its lease carries as an ancestor's outputs: every pair in the dataset image
 * ids `two_view_geometries.json` uses, its matches as `[keypoint in image 1, keypoint in image 2]`,
 * and `x-images` naming each id.
 */
import { decodeMatches } from "../../../protocol/wire/matches";
import { imageIdAt } from "../../../protocol/wire/verified-matches";
import type { OutputFile, TaskContext } from "../task-context";
import { datasetOf, inputFiles } from "./artifact";

export interface CorrespondenceGraph {
  pairs: { image_id1: number; image_id2: number; num_matches: number; matches: [number, number][] }[];
  "x-images": { image_id: number; name: string; resource_id: string }[];
}

/** Writes and sets the graph; null (nothing written) when the job matched nothing itself (it was given verified matches). */
export async function writeCorrespondenceGraph(ctx: TaskContext): Promise<OutputFile | null> {
  const { lease } = ctx;
  if (!lease.inputs.artifacts.matches && !lease.inputs.upstream.some((up) => up.kind === "match")) return null;
  const dataset = datasetOf(lease);
  const indexOf = new Map(dataset.images.map((im, i) => [im.name, i]));
  const graph: CorrespondenceGraph = {
    pairs: [],
    "x-images": dataset.images.map((im, i) => ({ image_id: imageIdAt(i), name: im.name, resource_id: im.image_id })),
  };
  for (const f of inputFiles(lease, "matches").values()) {
    for (const p of decodeMatches(await ctx.read(f.blob_sha))) {
      const [i1, i2] = [indexOf.get(p.imageName1), indexOf.get(p.imageName2)];
      if (i1 === undefined || i2 === undefined)
        throw new Error(`the matches name an image outside the dataset ('${p.imageName1}', '${p.imageName2}')`);
      const matches: [number, number][] = [];
      for (let k = 0; k < p.matches.length; k += 2) matches.push([p.matches[k]!, p.matches[k + 1]!]);
      graph.pairs.push({ image_id1: imageIdAt(i1), image_id2: imageIdAt(i2), num_matches: matches.length, matches });
    }
  }
  const file = await ctx.write("correspondence_graph.json", new TextEncoder().encode(JSON.stringify(graph)), "application/json");
  await ctx.reconstructionFile("correspondence_graph.json", file);
  return file;
}
