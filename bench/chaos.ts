/**
 * `npm run bench -- chaos [--jobs N] [--runners N] [--sets a,b|none] [--real-runners N] [--real-kill-s MIN,MAX]`:
 * jobs while runner processes are SIGKILLed at random (issue 22, Faults; scripts/runner-chaos.ts), on
 * the local stack. Part 1: `--jobs` (50) digest jobs (scripts/digest-runner.ts processes, `--runners`
 * of them, one killed every 2-5 s, leases of 2 s). Part 2: the incremental pipeline on each of
 * `--sets` (sacre-coeur and sceaux-castle, whose 6 MP photos' match shards are sized by descriptor
 * work so each ends between kills: docs/benchmarks.md), all at once, with `--real-runners` (2) real runner processes
 * (browser-runtime/runner/node-main.ts, wasm) of which one, busy or idle alike, is killed every
 * `--real-kill-s` (60,120) seconds of a whole, registered fleet (leases of 10 s; a killed map task resumes from its checkpoint).
 * Every job must succeed with one contiguous event log; digest jobs with the right digests, photo jobs
 * within their accuracy bars against the set's reference; no runner may end but by a kill.
 * Prints a table; writes bench/results/chaos.json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { EdgeSfmClient, type ProgressEvent, collect, unwrap } from "../client/index";
import { localRuntimeVersions } from "../browser-runtime/runner/node-host";
import { startLocalStack } from "../scripts/local-stack";
import { chaos, runnerProcess } from "../scripts/runner-chaos";
import type { Submitted } from "../scripts/photo-folder";
import { scoreAgainstReference, submitSet } from "../scripts/reference-sets";
import { arg } from "./_args";

const JOBS = Number(arg("jobs", "50"));
const RUNNERS = Number(arg("runners", "3"));
const SETS = arg("sets", "sacre-coeur,sceaux-castle")
  .split(",")
  .filter((s) => s && s !== "none");
const REAL_RUNNERS = Number(arg("real-runners", "2"));
const [REAL_MIN_S, REAL_MAX_S] = arg("real-kill-s", "60,120").split(",").map(Number) as [number, number];
const tsx = [process.execPath, "--import", "tsx"];

/** Prints, every 15 s until stopped, how many of `jobs` have ended and how many runners were killed. */
function ticker(client: EdgeSfmClient, label: string, jobs: () => string[], stats: { kills: number; busyKills: number }) {
  const t0 = performance.now();
  const timer = setInterval(() => {
    void Promise.all(
      jobs().map(async (jid) => (await unwrap(client.api.GET("/v1/jobs/{jid}", { params: { path: { jid } } }))).status),
    ).then((statuses) => {
      const ended = statuses.filter((s) => ["succeeded", "failed", "cancelled"].includes(s)).length;
      const s = ((performance.now() - t0) / 1000).toFixed(0);
      console.log(`[${label} ${s} s] ${ended}/${statuses.length} jobs ended; ${stats.kills} runners killed (${stats.busyKills} mid-task)`);
    });
  }, 15_000);
  return () => clearInterval(timer);
}

/**
 * Each job's event log read back: whether it is one log (ids 1..N) ending in the job's status, and
 * how many leases it says were lost and their work queued again (a killed runner's, once it expired).
 */
async function readLogs(client: EdgeSfmClient, jobs: string[]): Promise<Map<string, { contiguous: boolean; requeued: number }>> {
  const logs = new Map<string, { contiguous: boolean; requeued: number }>();
  for (const jid of jobs) {
    const events = (await collect(client.events(jid, { reconnect: false }))) as ProgressEvent[];
    logs.set(jid, {
      contiguous: events.every((e, i) => e.event_id === i + 1) && events.at(-1)?.kind === "job_status",
      requeued: events.filter((e) => e.kind === "warning" && / is queued again$/.test(e.message)).length,
    });
  }
  return logs;
}

/** What a fleet went through: kills, those mid-task, processes started, crashes (`stop()`'s answer), and the run's seconds. */
const fleetFigures = (stats: { kills: number; busyKills: number; started: number }, crashes: string[], seconds: number) => ({
  kills: stats.kills,
  kills_mid_task: stats.busyKills,
  runner_processes: stats.started,
  runner_crashes: crashes,
  seconds,
});

// ---- part 1: digest jobs ----
const digest = await (async () => {
  const server = await startLocalStack({ SVC_TEST_CAPABILITIES: "features.extract.sift", SVC_LEASE_TTL_SECONDS: "2" });
  try {
    const client = new EdgeSfmClient({ baseUrl: server.base });
    const { api } = client;
    const project = await unwrap(api.POST("/v1/projects", { body: { name: "chaos bench" } }));
    const dataset = await unwrap(
      api.POST("/v1/projects/{pid}/datasets", {
        params: { path: { pid: project.project_id } },
        body: { name: "chaos", source: { kind: "upload", entries: [] } },
      }),
    );
    const did = { path: { did: dataset.dataset_id } };
    const images: { name: string; sha256: string; byte_size: number }[] = [];
    for (let i = 0; i < 4; i++) {
      const bytes = new TextEncoder().encode(`chaos bench image ${i} ${Date.now()}`.repeat(100 * (i + 1)));
      const { blob_sha } = await client.upload(bytes);
      await unwrap(api.POST("/v1/datasets/{did}/images", { params: did, body: { name: `img${i}.jpg`, blob_sha } }));
      images.push({ name: `img${i}.jpg`, sha256: blob_sha, byte_size: bytes.byteLength });
    }
    const t0 = performance.now();
    const fleet = chaos({
      size: RUNNERS,
      minMs: 2000,
      maxMs: 5000,
      seed: 22,
      start: (i) =>
        runnerProcess([...tsx, "scripts/digest-runner.ts", server.base, `chaos-${i}`], `chaos-${i}`, { RUNNER_IMAGE_DELAY_MS: "50" }),
    });
    const jobs: string[] = [];
    for (let i = 0; i < JOBS; i++) {
      jobs.push((await unwrap(api.POST("/v1/datasets/{did}/features", { params: did, body: { spec: { seed: 5000 + i } } }))).job_id);
    }
    const stopTicker = ticker(client, "digest", () => jobs, fleet.stats);
    const details = await Promise.all(jobs.map((jid) => client.waitForJob(jid)));
    stopTicker();
    const seconds = (performance.now() - t0) / 1000;
    const crashes = await fleet.stop();
    const logs = await readLogs(client, jobs);
    let wrong = 0;
    for (const jid of jobs) {
      const seen: typeof images = [];
      const listed = await unwrap(api.GET("/v1/jobs/{jid}/artifacts", { params: { path: { jid }, query: { page_size: 500 } } }));
      for (const a of listed.items) {
        for (const f of a.files) {
          const res = await client.fetch(`/v1/artifacts/${a.artifact_id}/content?path=${encodeURIComponent(f.path)}`);
          seen.push(...(JSON.parse(await res.text()) as { images: typeof images }).images);
        }
      }
      if (JSON.stringify(seen.sort((a, b) => a.name.localeCompare(b.name))) !== JSON.stringify(images)) wrong++;
    }
    return {
      jobs: JOBS,
      succeeded: details.filter((j) => j.status === "succeeded").length,
      wrong_results: wrong,
      broken_logs: [...logs.values()].filter((l) => !l.contiguous).length,
      requeued_after_kills: [...logs.values()].reduce((n, l) => n + l.requeued, 0),
      ...fleetFigures(fleet.stats, crashes, seconds),
    };
  } finally {
    await server.stop();
  }
})();

// ---- part 2: real photo jobs ----
const real =
  SETS.length === 0
    ? null
    : await (async () => {
        const server = await startLocalStack({
          SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()),
          SVC_LEASE_TTL_SECONDS: "10",
        });
        try {
          const client = new EdgeSfmClient({ baseUrl: server.base });
          const fleet = chaos({
            size: REAL_RUNNERS,
            minMs: REAL_MIN_S * 1000,
            maxMs: REAL_MAX_S * 1000,
            seed: 23,
            // Any runner alike: a match shard can outlast the time between kills, and always killing
            // the one runner working on it would never let it end.
            preferBusy: false,
            start: (i) => runnerProcess([...tsx, "browser-runtime/runner/node-main.ts", server.base, `real-${i}`], `real-${i}`),
          });
          const t0 = performance.now();
          const submitted: (Submitted & { set: string })[] = [];
          for (const set of SETS) submitted.push({ set, ...(await submitSet(client, set)) });
          const stopTicker = ticker(client, "photos", () => submitted.map((s) => s.job_id), fleet.stats);
          const details = await Promise.all(submitted.map((s) => client.waitForJob(s.job_id)));
          stopTicker();
          const seconds = (performance.now() - t0) / 1000;
          const crashes = await fleet.stop();
          const logs = await readLogs(
            client,
            submitted.map((s) => s.job_id),
          );
          const jobs = [];
          for (const [i, s] of submitted.entries()) {
            const d = details[i]!;
            const scored = d.status === "succeeded" ? await scoreAgainstReference(client, s.set, s.recon_id) : null;
            jobs.push({
              set: s.set,
              status: d.status,
              registered: scored && `${scored.report.numRegistered}/${scored.report.numReferenceImages}`,
              median_rotation_deg: scored && +scored.report.medianRotationErrorDeg.toFixed(3),
              max_centre_extent_pct: scored && +(scored.report.maxCenterErrorFraction * 100).toFixed(2),
              mean_reproj_px: scored && +scored.meanReprojectionError.toFixed(3),
              bars: scored ? (scored.failures.length === 0 ? "pass" : scored.failures.join("; ")) : "not scored",
              log_contiguous: logs.get(s.job_id)!.contiguous,
              requeued_after_kills: logs.get(s.job_id)!.requeued,
            });
          }
          return {
            jobs,
            ...fleetFigures(fleet.stats, crashes, seconds),
          };
        } finally {
          await server.stop();
        }
      })();

const machine = { cpus: availableParallelism(), loadavg_1m: loadavg()[0]! };
const results = { machine, digest, real };
console.log(`chaos benchmark (wrangler local workerd; ${machine.cpus} cpus, load ${machine.loadavg_1m.toFixed(1)})`);
console.log(
  `digest jobs: ${digest.succeeded}/${digest.jobs} succeeded, ${digest.wrong_results} wrong results, ${digest.broken_logs} broken event logs; ` +
    `${digest.kills} runner processes SIGKILLed (${digest.kills_mid_task} mid-task), ${digest.requeued_after_kills} leases expired and their work queued again, ` +
    `${digest.runner_crashes.length} runners ended by themselves, ${digest.seconds.toFixed(1)} s`,
);
if (real) {
  for (const j of real.jobs) console.log(`photo job: ${JSON.stringify(j)}`);
  console.log(
    `photo jobs: ${real.kills} runner processes SIGKILLed (${real.kills_mid_task} mid-task), ` +
      `${real.runner_crashes.length} runners ended by themselves, ${real.seconds.toFixed(1)} s`,
  );
}
for (const crash of [...digest.runner_crashes, ...(real?.runner_crashes ?? [])]) console.log(`runner crash: ${crash}`);
mkdirSync(new URL("results/", import.meta.url), { recursive: true });
writeFileSync(new URL("results/chaos.json", import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
const failed =
  digest.succeeded !== digest.jobs ||
  digest.wrong_results > 0 ||
  digest.broken_logs > 0 ||
  digest.runner_crashes.length > 0 ||
  (real !== null &&
    (real.runner_crashes.length > 0 || real.jobs.some((j) => j.status !== "succeeded" || j.bars !== "pass" || !j.log_contiguous)));
process.exit(failed ? 1 : 0);
