/**
 * Faults during mapping (issue 6): a runner killed in the middle of a `map` task loses only its
 * lease; the task is reclaimed when the lease expires and another runner finishes it from the
 * last stored checkpoint, and the job succeeds with one contiguous event log.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunnerClient } from "../../browser-runtime/runner/client";
import { localRuntimeVersions, nodeRunnerHost } from "../../browser-runtime/runner/node-host";
import { Runner } from "../../browser-runtime/runner/runner";
import { type Server, startServer } from "../conformance/server";
import { httpClient } from "../support/http";
import { scoreAgainstReference, submitSet, waitForJob } from "../support/reconstruct";

const SET = "sacre-coeur";
let server: Server;
let doomed: ChildProcess | undefined;

beforeAll(async () => {
  server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()), SVC_LEASE_TTL_SECONDS: "4" });
});
afterAll(async () => {
  doomed?.kill("SIGKILL");
  await server?.stop();
});

describe("a runner killed mid-map", () => {
  it("costs only its lease: another runner resumes from the checkpoint and the job succeeds", async () => {
    const http = httpClient(server.base);
    const { job_id, recon_id } = await submitSet(http, SET, { snapshot_frames_freq: 2 });
    // The first three stages, computed here.
    const prep = new Runner(new RunnerClient({ base: server.base }), await nodeRunnerHost("prep"), { stages: ["extract", "match", "verify"] });
    expect(await prep.drain()).toBe(3);

    // A separate process takes the map task; it is frozen, then killed (no goodbye), once it has sealed
    // two snapshots (so the checkpoint stored with the first is surely there).
    doomed = spawn("npx", ["tsx", "browser-runtime/runner/node-main.ts", server.base, "doomed"], {
      cwd: new URL("../../", import.meta.url).pathname,
      env: { ...process.env, RUNNER_STAGES: "map" },
      stdio: "ignore",
      detached: true,
    });
    for (let i = 0; i < 600; i++) {
      if (((await http("GET", `/v1/reconstructions/${recon_id}/snapshots`)).json.seqs as number[]).length >= 2) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    process.kill(-doomed.pid!, "SIGSTOP");
    process.kill(-doomed.pid!, "SIGKILL");
    const killedAt = (await http("GET", `/v1/jobs/${job_id}`)).json.tasks[3];
    expect(killedAt.status).toBe("running");

    // Another runner gets the task once the lease has expired, with the checkpoint.
    const logs: string[] = [];
    const rescuer = new Runner(new RunnerClient({ base: server.base }), await nodeRunnerHost("rescuer"), { stages: ["map"], onLog: (l) => logs.push(l) });
    await rescuer.register();
    let ran = 0;
    for (let i = 0; i < 100 && ran === 0; i++) {
      ran = await rescuer.drain();
      if (ran === 0) await new Promise((r) => setTimeout(r, 250));
    }
    expect(ran).toBe(1);
    const job = await waitForJob(http, job_id);
    expect(job.status).toBe("succeeded");
    expect(job.tasks[3].attempts).toBe(2);
    expect(logs.some((l) => /leased map .* \(attempt 2\)/.test(l))).toBe(true);

    // One log, ids 1..N without gap or repeat, with the reclaim said in it.
    const text = new TextDecoder().decode((await http("GET", `/v1/jobs/${job_id}/events`)).raw);
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids).toEqual(ids.map((_, i) => i + 1));
    expect(text).toMatch(/"kind":"warning"[^\n]*queued again/);
    expect(text).toMatch(/resumed from a checkpoint/);

    const result = await scoreAgainstReference(http, SET, recon_id);
    expect(result.failures).toEqual([]);
  }, 600_000);
});
