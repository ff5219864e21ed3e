/**
 * Photos of two places in one dataset, as users bring them (issue 23: a model per place, each
 * exposed per 4.9), a camera per photo, through the public API and the Node runner:
 * - sacre-coeur's 10 Internet photos and sceaux-castle's 11: the incremental mapper builds one
 *   model per place, neither repeating the other, and so does the hierarchical one from clusters
 *   smaller than either place (each place's clusters joined);
 * - opensfm-lund's first 12 photos and sceaux-castle's 11 (both with EXIF focal lengths, so their
 *   pairs give relative rotations to average): the global mapper maps each connected part of the
 *   view graph, a model each, instead of the largest only and then the incremental fallback for all;
 *   with sacre-coeur instead of sceaux-castle (no rotations there), the part it cannot place is mapped
 *   by the incremental mapper alone, beside opensfm-lund's global model, rather than dropped.
 * The snapshot's root is the largest model and its components (`snapshots/{seq}/submodels/{idx}/...`)
 * serve each, which `npm run reconstruct` writes as sparse/0, sparse/1 (`sealedModels`).
 */
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunnerClient } from "../../client/index";
import { localRuntimeVersions, nodeRunnerHost } from "../../browser-runtime/runner/node-host";
import { Runner } from "../../browser-runtime/runner/runner";
import type { StageArtifact } from "../../protocol";
import { photoNames, sealedModels, submitFolder } from "../../scripts/photo-folder";
import { datasetDir } from "../../scripts/reference-sets";
import { type Server, startServer } from "../conformance/server";
import { httpClient, waitForJob } from "../support/http";

let server: Server;
const folders: string[] = [];

/** One folder of the first `count` photos of each set (all by default), each name prefixed with its place. */
function placesFolder(places: ReadonlyArray<readonly [string, number?]>): string {
  const folder = mkdtempSync(join(tmpdir(), "edgesfm-places-"));
  folders.push(folder);
  for (const [place, count] of places) {
    const images = fileURLToPath(new URL("images", datasetDir(place)));
    for (const name of photoNames(images).slice(0, count)) symlinkSync(join(images, name), join(folder, `${place}_${name}`));
  }
  return folder;
}

beforeAll(async () => {
  server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
});
afterAll(async () => {
  await server?.stop();
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

describe("photos of two places in one dataset (Node runner)", () => {
  it.each([
    ["incremental", {}, [["sacre-coeur"], ["sceaux-castle"]], null],
    // Clusters of at most 8: each place in two or more, which join into one model per place.
    ["hierarchical", { cluster_max_size: 8, cluster_overlap: 3 }, [["sacre-coeur"], ["sceaux-castle"]], "hierarchical"],
    ["global", {}, [["opensfm-lund", 12], ["sceaux-castle"]], "global"],
    // sacre-coeur's pairs give no rotation to average (no EXIF focal length): the global mapper cannot place that part,
    // so the incremental mapper maps that part alone, rather than drop a place.
    ["global", {}, [["opensfm-lund", 12], ["sacre-coeur"]], "global"],
  ] as const)(
    "%s (%j, %j): one model per place, the largest at the root and each as a component of the snapshot",
    async (recipe, spec, places, mapper) => {
      const http = httpClient(server.base);
      const { job_id, recon_id } = await submitFolder(http.client, placesFolder(places), {
        name: `two places, ${recipe}`,
        intrinsics_mode: "per_image",
        mapper: recipe,
        spec,
      });
      await new Runner(new RunnerClient({ baseUrl: server.base }), await nodeRunnerHost("places-node")).drain();
      const job = await waitForJob(http, job_id);
      expect(job.status, JSON.stringify(job.tasks.map((t: any) => [t.kind, t.status, t.error_message]))).toBe("succeeded");
      const artifacts = (await http("GET", `/v1/jobs/${job_id}/artifacts?page_size=500`)).json.items as StageArtifact[];
      const sparse = artifacts.filter((a) => a.kind === "reconstruction.sparse.v1").at(-1)!;
      // The global and hierarchical recipes name the mapper that made the models; the incremental recipe names none.
      expect(sparse.summary).toMatchObject({ num_models: 2, ...(mapper ? { "x-mapper": mapper } : {}) });
      // The global recipe names each part it left to the incremental mapper.
      if (recipe === "global")
        expect(sparse.summary["x-incremental_parts"]).toEqual(
          places.some(([place]) => place === "sacre-coeur") ? [expect.stringMatching(/^part 2 of 2 .*: no model$/)] : undefined,
        );

      const models = await sealedModels(http.client, recon_id);
      const placesOf = models.map((m) => [...new Set(m.images.images.map((im) => im.name.split("_")[0]))]);
      const sizes = models.map((m) => m.images.images.length);
      console.log(`two places (${recipe}, ${mapper ?? "incremental"}): models of ${sizes.join(", ")} photos, ${JSON.stringify(placesOf)}`);
      // One model per place, each of one place only; most of each place registered.
      expect(placesOf.map((p) => p.length)).toEqual([1, 1]);
      expect(new Set(placesOf.flat())).toEqual(new Set(places.map(([place]) => place)));
      for (const [k, [place]] of placesOf.entries()) {
        const [, count] = places.find(([p]) => p === place)!;
        expect(sizes[k]).toBeGreaterThanOrEqual((count ?? photoNames(fileURLToPath(new URL("images", datasetDir(place!)))).length) - 2);
      }
      expect(sizes[0]).toBeGreaterThanOrEqual(sizes[1]!);
      // The root's summary lists both; each component's files hold its own model.
      expect(models[0]!.summary.models.map((m) => m.num_reg_images)).toEqual(sizes);
      for (const m of models) expect(m.points.byteLength).toBeGreaterThan(0);
      const submodels = (await http("GET", `/v1/reconstructions/${recon_id}/submodels`)).json.items as unknown[];
      expect(submodels.length).toBeGreaterThanOrEqual(2);
    },
    900_000,
  );
});
