/**
 * Faults during mapping (issue 6): a runner killed in the middle of a `map` task loses only its
 * lease; the task is reclaimed when the lease expires and another runner finishes it from the
 * last stored checkpoint, and the job succeeds with one contiguous event log. A cooperative
 * cancel during `map` stops the job at a phase boundary; `:resume` continues the mapping from the
 * stored checkpoint (3.1). The second job reuses the first one's features, matches and
 * verification (same photos and parameters: cache hits, 3.2.1), so only its mapping is computed.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Checkpoint, type Lease, type LeaseState, RunnerClient, type RunnerEvent } from "../../client/index";
import type { LeaseDirective } from "../../protocol";
import { localRuntimeVersions, nodeRunnerHost } from "../../browser-runtime/runner/node-host";
import { Runner } from "../../browser-runtime/runner/runner";
import { type Server, startServer } from "../conformance/server";
import { eventLog, httpClient, waitForJob } from "../support/http";
import { scoreAgainstReference, submitSet } from "../../scripts/reference-sets";

const SET = "sacre-coeur";
let server: Server;
let doomed: ChildProcess | undefined;

beforeAll(async () => {
  // A short lease, so the killed runner's task is reclaimed soon (a live runner's keep-alive holds
  // its lease through long engine calls: browser-runtime/runner/keep-alive/).
  server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()), SVC_LEASE_TTL_SECONDS: "10" });
});
afterAll(async () => {
  doomed?.kill("SIGKILL");
  await server?.stop();
});

describe("faults during mapping", () => {
  it("a runner killed mid-map costs only its lease: another runner resumes from the checkpoint and the job succeeds", async () => {
    const http = httpClient(server.base);
    const { job_id, recon_id } = await submitSet(http.client, SET, { snapshot_frames_freq: 2 });
    // The first three stages, computed here.
    const prep = new Runner(new RunnerClient({ baseUrl: server.base }), await nodeRunnerHost("prep"), {
      stages: ["extract", "match", "verify"],
    });
    const prepared = await prep.drain();
    // One lease a shard (match and verify shards packed by the photos' real keypoints).
    const tasks = (await http("GET", `/v1/jobs/${job_id}`)).json.tasks as { "x-shards": { total: number } }[];
    expect(prepared).toBe(tasks.slice(0, 3).reduce((n, t) => n + t["x-shards"].total, 0));

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
    const rescuer = new Runner(new RunnerClient({ baseUrl: server.base }), await nodeRunnerHost("rescuer"), {
      stages: ["map"],
      onLog: (l) => logs.push(l),
    });
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

    // One log, with the reclaim said in it.
    const events = await eventLog(http.client, job_id);
    expect(events.some((e) => e.kind === "warning" && /queued again/.test(e.message))).toBe(true);
    expect(events.some((e) => e.kind === "log_line" && /resumed from a checkpoint/.test(e.message))).toBe(true);

    const result = await scoreAgainstReference(http.client, SET, recon_id);
    expect(result.failures).toEqual([]);
  }, 600_000);

  it("a cooperative cancel during map stops the job; resume continues from the stored checkpoint", async () => {
    const http = httpClient(server.base);
    // Another snapshot cadence: another map task, while the first three stages are cache hits.
    const { job_id, recon_id } = await submitSet(http.client, SET, { snapshot_frames_freq: 3 });
    const client = new CancelAfterFirstCheckpoint(server.base, async () => {
      expect((await http("POST", `/v1/jobs/${job_id}:cancel`)).status).toBe(200);
    });
    const logs: string[] = [];
    const runner = new Runner(client, await nodeRunnerHost("cancelled"), { onLog: (l) => logs.push(l) });

    // The map task stops at the phase boundary after its first checkpoint and gives its lease back.
    await runner.drain();
    expect(logs.some((l) => /released .* \(cancel\)/.test(l))).toBe(true);
    const cancelled = (await http("GET", `/v1/jobs/${job_id}`)).json;
    expect(cancelled.status).toBe("cancelled");
    expect(cancelled.tasks.map((t: { status: string }) => t.status)).toEqual(["succeeded", "succeeded", "succeeded", "cancelled"]);
    const stored = client.checkpoint!;
    const registered = stored.summary.num_registrations as number;
    const before = (await http("GET", `/v1/reconstructions/${recon_id}/snapshots`)).json.seqs as number[];

    expect((await http("POST", `/v1/jobs/${job_id}:resume`)).status).toBe(202);
    expect(await runner.drain()).toBe(1);
    const job = await waitForJob(http, job_id);
    expect(job.status).toBe("succeeded");
    expect(job.tasks[3].attempts).toBe(2);

    // The resumed lease carried the checkpoint, and the mapping went on from it: every registration
    // count and snapshot after the resume lies beyond the checkpoint's (a restart would begin at
    // the initial pair again), and the snapshot seqs continue.
    const resumed = client.leases.at(-1)!;
    expect(resumed.task.kind).toBe("map");
    expect(resumed.checkpoint).toMatchObject({ blob_sha: stored.blob_sha, summary: { num_registrations: registered } });
    const events = await eventLog(http.client, job_id);
    const resumedAt = events.findIndex(
      (e) => e.kind === "log_line" && /resumed from a checkpoint with (\d+) registrations/.test(e.message),
    );
    expect(resumedAt).toBeGreaterThan(0);
    expect(events[resumedAt]).toMatchObject({ message: expect.stringContaining(`with ${registered} registrations`) });
    const after = events.slice(resumedAt);
    const progress = after.flatMap((e) => (e.kind === "phase_progress" && e.task_id === resumed.task.task_id ? [e.current] : []));
    expect(progress.length).toBeGreaterThan(0);
    expect(Math.min(...progress)).toBeGreaterThanOrEqual(registered);
    const sealed = after.flatMap((e) => (e.kind === "snapshot_available" ? [e] : []));
    expect(sealed.length).toBeGreaterThan(0);
    expect(sealed.map((e) => e.snapshot_seq)).toEqual(sealed.map((_, i) => before.at(-1)! + 1 + i));
    for (const e of sealed) expect(e.summary.num_reg_images as number).toBeGreaterThan(registered);

    const result = await scoreAgainstReference(http.client, SET, recon_id);
    expect(result.failures).toEqual([]);
  }, 600_000);
});

/**
 * The runner protocol as a runner sees it, with a cancel at a known point: once the first
 * checkpoint is stored, it asks for the job's cancel and holds the executor until a heartbeat
 * brings the `stop` directive, so the task stops at that phase boundary (not after finishing).
 * Remembers the leases it got and the checkpoint it stored.
 */
class CancelAfterFirstCheckpoint extends RunnerClient {
  readonly leases: Lease[] = [];
  checkpoint: Checkpoint | null = null;
  private directive: LeaseDirective = "continue";

  constructor(
    base: string,
    private readonly cancel: () => Promise<void>,
  ) {
    super({ baseUrl: base });
  }

  // Every lease request goes through here: a one-lane runner's plain one and a multi-lane runner's batch.
  override async leaseBatch(runnerId: string, waitSeconds?: number, max?: number): Promise<Lease[]> {
    const leased = await super.leaseBatch(runnerId, waitSeconds, max);
    this.leases.push(...leased);
    return leased;
  }

  override async heartbeat(leaseId: string): Promise<LeaseState> {
    return this.noted(await super.heartbeat(leaseId));
  }

  override async postEvents(leaseId: string, events: RunnerEvent[]): Promise<LeaseState> {
    return this.noted(await super.postEvents(leaseId, events));
  }

  override async putCheckpoint(leaseId: string, checkpoint: Checkpoint): Promise<LeaseState> {
    const state = await super.putCheckpoint(leaseId, checkpoint);
    if (!this.checkpoint) {
      this.checkpoint = checkpoint;
      await this.cancel();
      while (this.directive !== "stop") await new Promise((r) => setTimeout(r, 100));
    }
    return state;
  }

  private noted(state: LeaseState): LeaseState {
    this.directive = state.directive;
    return state;
  }
}
