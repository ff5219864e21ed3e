/**
 * Photos of two places in one dataset, as users bring them (issue 23: a model per place, each
 * exposed per 4.9): sacre-coeur's 10 Internet photos and sceaux-castle's 11, one folder, a camera
 * per photo, through the public API and the Node runner. The incremental mapper builds one model
 * per place, neither repeating the other, and so does the hierarchical one from clusters smaller than
 * either place (each place's clusters joined); the snapshot's root is the largest and its components
 * (`snapshots/{seq}/submodels/{idx}/...`) serve each model, which `npm run reconstruct` writes as
 * sparse/0, sparse/1 (`sealedModels`).
 */
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunnerClient } from "../../client/index";
import { localRuntimeVersions, nodeRunnerHost } from "../../browser-runtime/runner/node-host";
import { Runner } from "../../browser-runtime/runner/runner";
import { photoNames, sealedModels, submitFolder } from "../../scripts/photo-folder";
import { datasetDir } from "../../scripts/reference-sets";
import { type Server, startServer } from "../conformance/server";
import { httpClient, waitForJob } from "../support/http";

const PLACES = ["sacre-coeur", "sceaux-castle"];
let server: Server;
let folder: string;

beforeAll(async () => {
  server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
  // One folder of both sets' photos, each name prefixed with its place.
  folder = mkdtempSync(join(tmpdir(), "edgesfm-places-"));
  for (const place of PLACES) {
    const images = fileURLToPath(new URL("images", datasetDir(place)));
    for (const name of photoNames(images)) symlinkSync(join(images, name), join(folder, `${place}_${name}`));
  }
});
afterAll(async () => {
  await server?.stop();
  if (folder) rmSync(folder, { recursive: true, force: true });
});

describe("photos of two places in one dataset (Node runner)", () => {
  it.each([
    ["incremental", {}],
    // Clusters of at most 8: each place in two or more, which join into one model per place.
    ["hierarchical", { cluster_max_size: 8, cluster_overlap: 3 }],
  ] as const)(
    "%s: one model per place, the largest at the root and each as a component of the snapshot",
    async (mapper, spec) => {
      const http = httpClient(server.base);
      const { job_id, recon_id } = await submitFolder(http.client, folder, {
        name: `two places, ${mapper}`,
        intrinsics_mode: "per_image",
        mapper,
        spec,
      });
      await new Runner(new RunnerClient({ baseUrl: server.base }), await nodeRunnerHost("places-node")).drain();
      const job = await waitForJob(http, job_id);
      expect(job.status, JSON.stringify(job.tasks.map((t: any) => [t.kind, t.status, t.error_message]))).toBe("succeeded");

      const models = await sealedModels(http.client, recon_id);
      const placesOf = models.map((m) => [...new Set(m.images.images.map((im) => im.name.split("_")[0]))]);
      const sizes = models.map((m) => m.images.images.length);
      console.log(`two places (${mapper}): models of ${sizes.join(", ")} photos, ${JSON.stringify(placesOf)}`);
      // One model per place, each of one place only; most of each place registered.
      expect(placesOf.map((p) => p.length)).toEqual([1, 1]);
      expect(new Set(placesOf.flat())).toEqual(new Set(PLACES));
      for (const [k, [place]] of placesOf.entries()) expect(sizes[k]).toBeGreaterThanOrEqual(place === "sceaux-castle" ? 10 : 8);
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
