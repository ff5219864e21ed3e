/**
 * A runner in a real browser: headless Chromium opens the server's own /runner.html, whose Web
 * Worker (wasm engine, platform decoder, IndexedDB cache) computes the whole incremental recipe
 * on a shared photo set, extracting and matching on nested engine workers, one per core; the
 * result meets issue 5's bars against COLMAP. This is what `npm start` runs, and why the
 * pipeline's capabilities are advertised.
 */
import { availableParallelism } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../../browser-runtime/headless/chromium";
import { localRuntimeVersions } from "../../browser-runtime/runner/node-host";
import { type Server, startServer } from "../conformance/server";
import { httpClient, waitForJob } from "../support/http";
import { encodePng, stripedPanorama, uploadPanoramaDataset } from "../support/panoramas";
import { scoreAgainstReference, submitSet } from "../../scripts/reference-sets";

const SET = "sacre-coeur";
let server: Server;
let browser: Awaited<ReturnType<typeof launchChromium>>;
const logs: string[] = [];

beforeAll(async () => {
  server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
  browser = await launchChromium();
  const page = await browser.context.newPage();
  page.on("console", (m) => logs.push(m.text()));
  await page.goto(`${server.base}/runner.html?name=e2e-chromium`);
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe("runner in headless Chromium", () => {
  it(`computes the incremental recipe on ${SET} within issue 5's bars`, async () => {
    const http = httpClient(server.base);
    const caps = (await http("GET", "/v1/capabilities")).json.features;
    for (const c of ["features.extract.sift", "matchers.nn-mutual", "matches.verify", "map.incremental", "pipelines.incremental"])
      expect(caps[c], c).toBe(true);
    const { job_id, recon_id } = await submitSet(http.client, SET);
    const job = await waitForJob(http, job_id);
    expect(job.status, `${JSON.stringify(job.tasks.map((t: any) => [t.kind, t.status, t.error_message]))}\n${logs.join("\n")}`).toBe(
      "succeeded",
    );
    const result = await scoreAgainstReference(http.client, SET, recon_id);
    expect(result.failures).toEqual([]);
    expect(logs.some((l) => l.includes("registered"))).toBe(true);
    const said = new TextDecoder().decode((await http("GET", `/v1/jobs/${job_id}/events`)).raw);
    expect(said).toMatch(
      availableParallelism() > 1 ? /SIFT of \d+ images on WASM, [2-9]\d* engines at once/ : /SIFT of \d+ images on WASM, 1 engine at once/,
    );
  }, 900_000);

  it("renders a cubemap (4.14): the browser's decoder and encoder, on the projection path it measured faster", async () => {
    const http = httpClient(server.base);
    const pid = (await http("POST", "/v1/projects", { name: "pano" })).json.project_id;
    const did = await uploadPanoramaDataset(http, pid, "p", [["pano.png", await encodePng(stripedPanorama(1))]]);
    const submitted = await http("POST", `/v1/datasets/${did}:render_cubemap?face_size=64`, {});
    const job = await waitForJob(http, submitted.json.job_id);
    expect(job.status, `${job.error_message}\n${logs.join("\n")}`).toBe("succeeded");
    const derived = job.tasks[0].outputs_ref.result.derived_dataset;
    const images = (await http("GET", `/v1/datasets/${derived.dataset_id}/images`)).json.items;
    expect(images.map((i: { name: string }) => i.name).sort()).toEqual([
      "back/pano.jpg",
      "down/pano.jpg",
      "front/pano.jpg",
      "left/pano.jpg",
      "right/pano.jpg",
      "up/pano.jpg",
    ]);
    for (const image of images) expect(image).toMatchObject({ width: 64, height: 64, media_type: "image/jpeg" });
    const said = new TextDecoder().decode((await http("GET", `/v1/jobs/${submitted.json.job_id}/events`)).raw);
    expect(said).toMatch(/6 images by equirectangular_to_cubemap \(linear\) on (WASM|WebGPU)/);
  }, 300_000);
});
