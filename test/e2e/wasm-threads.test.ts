/**
 * WebAssembly threads in a real browser (issue 18): headless Chromium opens the server's own
 * /runner.html, served cross-origin isolated, whose worker loads the threaded engine (shared
 * memory and a pthread pool) and reports `wasm.threads`; the set's whole recipe then maps on it.
 * The same recipe on a fresh server (a fresh cache) with `?threads=0`, the plain engine in the same
 * browser, gives the same model: the engine's parallel loops are deterministic by construction
 * (engine-wasm/src/util/parallel_for.h), which is also why both report one engine version.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../../browser-runtime/headless/chromium";
import { localRuntimeVersions } from "../../browser-runtime/runner/node-host";
import { startServer } from "../conformance/server";
import { httpClient, waitForJob } from "../support/http";
import { lastSnapshot } from "../../scripts/photo-folder";
import { submitSet } from "../../scripts/reference-sets";

const SET = "sacre-coeur";
let browser: Awaited<ReturnType<typeof launchChromium>>;

beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

/** The set's recipe on a fresh server, computed by a runner page opened with `query`. */
async function reconstruct(query: string) {
  const server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
  const page = await browser.context.newPage();
  const logs: string[] = [];
  page.on("console", (m) => logs.push(m.text()));
  try {
    await page.goto(`${server.base}/runner.html?name=e2e-threads&${query}`);
    await expect.poll(() => page.textContent("#abilities"), { timeout: 180_000 }).toMatch(/WASM/);
    const http = httpClient(server.base);
    const tools = (await http("GET", "/v1/admin/plugins/detect-tools")).json.tools as { name: string; runners: number }[];
    const { job_id, recon_id } = await submitSet(http.client, SET);
    const job = await waitForJob(http, job_id);
    expect(job.status, `${JSON.stringify(job.tasks.map((t: any) => [t.kind, t.status, t.error_message]))}\n${logs.join("\n")}`).toBe(
      "succeeded",
    );
    return {
      abilities: await page.textContent("#abilities"),
      threadedRunners: tools.find((t) => t.name === "wasm_threads")!.runners,
      model: await lastSnapshot(http.client, recon_id),
      logs,
    };
  } finally {
    await page.close();
    await server.stop();
  }
}

describe("wasm threads in headless Chromium", () => {
  it(`maps ${SET} on the threaded engine, as the plain engine does`, async () => {
    const threaded = await reconstruct("");
    expect(threaded.abilities, threaded.logs.join("\n")).toMatch(/WASM SIMD \+ threads/);
    expect(threaded.threadedRunners).toBe(1);
    const plain = await reconstruct("threads=0");
    expect(plain.abilities).not.toMatch(/threads/);
    expect(plain.threadedRunners).toBe(0);

    const poses = (m: typeof plain.model) => new Map(m.images.images.map((im) => [im.name, im.cam_from_world]));
    const [a, b] = [poses(threaded.model), poses(plain.model)];
    expect([...a.keys()].sort()).toEqual([...b.keys()].sort());
    expect(a.size).toBeGreaterThanOrEqual(9);
    for (const [name, pose] of a) {
      const other = b.get(name)!;
      const q = pose.rotation;
      const r = other.rotation;
      // Equal by construction; a tolerance far below any visible difference guards the comparison.
      expect(Math.abs(q.w * r.w + q.x * r.x + q.y * r.y + q.z * r.z), name).toBeGreaterThan(1 - 1e-12);
      for (let i = 0; i < 3; i++) expect(pose.translation[i]! - other.translation[i]!, name).toBeCloseTo(0, 9);
    }
    expect(threaded.model.summary.models).toEqual(plain.model.summary.models);
    expect(threaded.model.points).toEqual(plain.model.points);
    expect(threaded.model.summary.mean_reproj_err).toBeCloseTo(plain.model.summary.mean_reproj_err, 9);
  }, 1_500_000);
});
