/**
 * @module Runners killed at random while jobs run (issue 22, Faults): a fleet of runners of which
 * one, chosen at random, is killed every so often and replaced by a fresh one, as volunteers'
 * tabs close and machines die. A killed runner says nothing more: its requests in flight are cut
 * (an in-process digest runner's fetches are aborted; a runner process gets SIGKILL), so its lease
 * is reclaimed only when it expires. Used by test/e2e/runner-kills.test.ts (in-process digest
 * runners, short) and `npm run bench -- chaos` (runner processes, digest and real, long).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { DigestRunner } from "./digest-runner";

/** One runner of the fleet: `kill()` ends it without a word; `busy` says whether it holds a lease now. */
export interface Killable {
  name: string;
  kill(): void;
  readonly busy: boolean;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * A digest runner in this process that can be killed: every request goes through an abort signal,
 * so a kill cuts the requests in flight (mid upload, mid complete) and refuses any later one.
 */
export function killableDigestRunner(base: string, name: string, o: { imageDelayMs?: number; authorization?: string } = {}): Killable {
  const cut = new AbortController();
  const runner = new DigestRunner({
    base,
    name,
    authorization: o.authorization,
    fetch: (req) => (cut.signal.aborted ? Promise.reject(new Error("killed")) : fetch(new Request(req, { signal: cut.signal }))),
  });
  let busy = false;
  void (async () => {
    try {
      await runner.register();
      while (!cut.signal.aborted) {
        // A long poll: an idle runner waits on the server instead of polling it.
        const lease = await runner.client.lease(runner.runner!.runner_id, 2);
        if (!lease) continue;
        busy = true;
        await runner.work(lease, () => sleep(o.imageDelayMs ?? 0));
        busy = false;
      }
    } catch (e) {
      if (!cut.signal.aborted) console.error(`[${name}] ${(e as Error).message}`);
    }
  })();
  return {
    name,
    kill: () => cut.abort(),
    get busy() {
      return busy;
    },
  };
}

/** A runner process (its own process group, so SIGKILL reaches its children), busy from a `leased` line to the next outcome line. */
export function runnerProcess(command: string[], name: string, env: Record<string, string> = {}): Killable {
  const child: ChildProcess = spawn(command[0]!, command.slice(1), {
    cwd: new URL("..", import.meta.url).pathname,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "ignore"],
    detached: true,
  });
  let busy = false;
  createInterface({ input: child.stdout! }).on("line", (line) => {
    // The digest runner's lines (`leased ...`, `completed ...`) or the runner's (`[runner name] leased ...`).
    if (/(^|\] )leased /.test(line)) busy = true;
    else if (/(^|\] )(completed|stopped|failed|released|teardown of) /.test(line)) busy = false;
  });
  return {
    name,
    kill: () => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // already gone
      }
    },
    get busy() {
      return busy;
    },
  };
}

export interface ChaosOptions {
  /** Runners alive at any time. */
  size: number;
  /** A kill every `minMs`..`maxMs` (uniform). */
  minMs: number;
  maxMs: number;
  /** Starts runner number `i` (0, 1, 2, ...). */
  start: (i: number) => Killable;
  /** Seeded choices, so a failing run can be repeated. */
  seed?: number;
}

/**
 * Keeps `size` runners alive and kills one at random every `minMs..maxMs`, preferring one that
 * holds a lease (a kill of an idle runner tests little), then starts its replacement.
 * `stop()` ends the killing and every runner; `kills` counts the kills, `busyKills` those mid-task.
 */
export function chaos(o: ChaosOptions) {
  let state = (o.seed ?? 1) >>> 0 || 1;
  const random = () => {
    // xorshift32
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
  let started = 0;
  const fleet: Killable[] = [];
  for (; started < o.size; started++) fleet.push(o.start(started));
  const stats = { kills: 0, busyKills: 0, started: o.size };
  let stopped = false;
  // The wait between kills ends early on stop(), however long it was drawn.
  let wake = () => {};
  const loop = (async () => {
    while (!stopped) {
      await new Promise<void>((r) => {
        const timer = setTimeout(r, o.minMs + random() * (o.maxMs - o.minMs));
        wake = () => {
          clearTimeout(timer);
          r();
        };
      });
      if (stopped) break;
      const busy = fleet.filter((r) => r.busy);
      const pool = busy.length > 0 ? busy : fleet;
      const victim = pool[Math.floor(random() * pool.length)]!;
      if (victim.busy) stats.busyKills++;
      victim.kill();
      stats.kills++;
      fleet.splice(fleet.indexOf(victim), 1, o.start(started++));
      stats.started++;
    }
  })();
  return {
    stats,
    async stop() {
      stopped = true;
      wake();
      await loop;
      for (const r of fleet) r.kill();
    },
  };
}
