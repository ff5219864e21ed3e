/**
 * `npm start` as a user runs it (scripts/start.mjs), in `api_key` mode, set from its environment:
 * its own headless-Chromium runner registers under the operator token the script issues, computes a
 * tenant's job, and then the idle stack is quiet (issue 17: no line per lease long poll). The builds
 * are skipped (EDGESFM_BUILD=0): `npm test` has built the engine and the site from these files, and
 * rebuilding the site would pull it from under the other suites.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpClient, waitForJob } from "../support/http";
import { encodePng, stripedPanorama, uploadPanoramaDataset } from "../support/panoramas";

const root = new URL("../../", import.meta.url).pathname;
const stateDir = mkdtempSync(join(tmpdir(), "edgesfm-npm-start-"));
const output: string[] = [];
let child: ChildProcess;
let base: string;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  child = spawn(process.execPath, ["scripts/start.mjs"], {
    cwd: root,
    env: { ...process.env, PORT: String(port), EDGESFM_STATE_DIR: stateDir, EDGESFM_BUILD: "0", SVC_AUTH_MODE: "api_key" },
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group, so the end of the test stops wrangler, workerd and Chromium too.
    detached: true,
  });
  for (const stream of [child.stdout!, child.stderr!]) createInterface({ input: stream }).on("line", (l) => output.push(l));
  for (let i = 0; i < 240; i++) {
    if (
      await fetch(`${base}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`npm start did not answer on ${base}:\n${output.join("\n")}`);
}, 180_000);

afterAll(async () => {
  if (child?.exitCode === null) {
    const exited = new Promise((r) => child.once("exit", r));
    process.kill(-child.pid!, "SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
  }
  rmSync(stateDir, { recursive: true, force: true });
});

describe("npm start in api_key mode", () => {
  it("computes a tenant's job with its own runner, then idles quietly", async () => {
    const anonymous = await fetch(`${base}/v1/projects`);
    expect(anonymous.status).toBe(401);
    const { raw_key } = (await httpClient(base)("POST", "/v1/admin/api-keys", { tenant_id: "npm-start" })).json;
    const http = httpClient(base, { Authorization: `Bearer ${raw_key}` });
    const pid = (await http("POST", "/v1/projects", { name: "npm start" })).json.project_id;
    const did = await uploadPanoramaDataset(http, pid, "p", [["pano.png", await encodePng(stripedPanorama(1))]]);
    const submitted = await http("POST", `/v1/datasets/${did}:render_cubemap?face_size=64`, {});
    expect(submitted.status, JSON.stringify(submitted.json)).toBe(202);
    const job = await waitForJob(http, submitted.json.job_id);
    expect(job.status, `${job.error_message}\n${output.join("\n")}`).toBe("succeeded");

    // Idle past a whole lease long poll (25 s): no request or lease is logged.
    const before = output.length;
    await new Promise((r) => setTimeout(r, 30_000));
    expect(output.slice(before).filter((l) => /lease|\b(GET|POST)\b/i.test(l))).toEqual([]);
  }, 300_000);
});
