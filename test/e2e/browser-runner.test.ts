/**
 * A runner in a real browser: headless Chromium opens the server's own /runner.html, the runner
 * registers from its Web Worker (engine wasm + platform decoder) and computes a `features` job
 * on a shared photo. This is what makes `features.extract.sift` true under `npm start`.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../../browser-runtime/headless/chromium";
import { localRuntimeVersions } from "../../browser-runtime/runner/node-host";
import { type Server, startServer } from "../conformance/server";
import { httpClient, uploadBytes } from "../support/http";

const PHOTO = new URL("../../../shared/datasets/sacre-coeur/images/10265353_3838484249.jpg", import.meta.url);

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
  it("registers and computes a features job on a real photo", async () => {
    const http = httpClient(server.base);
    expect((await http("GET", "/v1/capabilities")).json.features["features.extract.sift"]).toBe(true);
    const project = await http("POST", "/v1/projects", { name: "browser runner" });
    const blob = await uploadBytes(http, new Uint8Array(readFileSync(PHOTO)));
    const ds = await http("POST", `/v1/projects/${project.json.project_id}/datasets`, {
      name: "one photo",
      source: { kind: "upload", entries: [{ name: "photo.jpg", blob_sha: blob }] },
    });
    const job = await http("POST", `/v1/datasets/${ds.json.dataset_id}/features`, { spec: { type: "sift", max_num_features: 4000 } });
    expect(job.status).toBe(202);
    let status = "pending";
    let detail: any;
    for (let i = 0; i < 240 && ["pending", "running"].includes(status); i++) {
      await new Promise((r) => setTimeout(r, 500));
      detail = (await http("GET", `/v1/jobs/${job.json.job_id}`)).json;
      status = detail.status;
    }
    expect(status, `${JSON.stringify(detail)}\n${logs.join("\n")}`).toBe("succeeded");
    const artifact = detail.tasks[0].outputs_ref.artifacts[0];
    expect(artifact.kind).toBe("features.local.v1");
    expect(artifact.summary.num_keypoints).toBeGreaterThan(2000);
    expect(logs.some((l) => l.includes("registered"))).toBe(true);
  });
});
