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
  /**
   * Settles once the runner has registered (it can take work), or has ended before that. A real
   * runner takes tens of seconds to start on a loaded machine: the time between kills counts from
   * here, so it is time the whole fleet could compute.
   */
  readonly ready: Promise<void>;
  /** Why the runner ended on its own (not by `kill()`), once it has: a crash the run must report. */
  readonly died: string | null;
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
  let died: string | null = null;
  let registered = () => {};
  const ready = new Promise<void>((r) => (registered = r));
  void (async () => {
    try {
      await runner.register();
      registered();
      while (!cut.signal.aborted) {
        // A long poll: an idle runner waits on the server instead of polling it.
        const lease = await runner.client.lease(runner.runner!.runner_id, 2);
        if (!lease) continue;
        busy = true;
        await runner.work(lease, () => sleep(o.imageDelayMs ?? 0));
        busy = false;
      }
    } catch (e) {
      if (!cut.signal.aborted) died = (e as Error).message;
    } finally {
      registered();
    }
  })();
  return {
    name,
    kill: () => cut.abort(),
    get busy() {
      return busy;
    },
    ready,
    get died() {
      return died;
    },
  };
}

/**
 * A runner process (its own process group, so SIGKILL reaches its children): ready at its
 * `registered` line, busy from a `leased` line to the next outcome line. Ended by anything but
 * `kill()`, it is `died`, with its exit and the last lines it wrote to stderr.
 */
export function runnerProcess(command: string[], name: string, env: Record<string, string> = {}): Killable {
  const child: ChildProcess = spawn(command[0]!, command.slice(1), {
    cwd: new URL("..", import.meta.url).pathname,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let busy = false;
  let killed = false;
  let died: string | null = null;
  let registered = () => {};
  const ready = new Promise<void>((r) => (registered = r));
  const stderr: string[] = [];
  // The digest runner's lines (`registered ...`, `leased ...`, `completed ...`) or the runner's (`[runner name] leased ...`).
  createInterface({ input: child.stdout! }).on("line", (line) => {
    if (/(^|\] )registered /.test(line)) registered();
    else if (/(^|\] )leased /.test(line)) busy = true;
    else if (/(^|\] )(completed|stopped|failed|released|teardown of) /.test(line)) busy = false;
  });
  createInterface({ input: child.stderr! }).on("line", (line) => {
    if (stderr.push(line) > 20) stderr.shift();
  });
  child.on("exit", (code, signal) => {
    if (!killed) died = `${name} exited by itself (${signal ?? `code ${code}`})${stderr.length > 0 ? `: ${stderr.join("\n")}` : ""}`;
    registered();
  });
  return {
    name,
    kill: () => {
      killed = true;
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // already gone
      }
    },
    get busy() {
      return busy;
    },
    ready,
    get died() {
      return died;
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
  /**
   * Kill a runner that holds a lease whenever one does (default), or any runner alike. A task
   * that takes longer than the time between kills never ends while the busy runner is always the
   * one killed: real shards run for minutes on a loaded machine and have no checkpoint.
   */
  preferBusy?: boolean;
}

/**
 * Keeps `size` runners alive and kills one at random every `minMs..maxMs`, preferring one that
 * holds a lease (a kill of an idle runner tests little) unless `preferBusy` is false, then starts
 * its replacement. The wait
 * for the next kill starts once the whole fleet is ready (registered), so a slow start is not
 * counted as time to compute. `stop()` ends the killing and every runner, and answers `died`:
 * why each runner that ended on its own did (a crash, not a kill). `kills` counts the kills,
 * `busyKills` those mid-task.
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
  const all: Killable[] = [];
  const start = () => {
    const runner = o.start(all.length);
    all.push(runner);
    return runner;
  };
  const fleet = Array.from({ length: o.size }, start);
  const stats = {
    kills: 0,
    busyKills: 0,
    get started() {
      return all.length;
    },
  };
  let stopped = false;
  // A wait (for the fleet to be ready, or between kills) ends early on stop(), however long it is.
  let wake = () => {};
  const until = (p: Promise<unknown>) =>
    new Promise<void>((r) => {
      wake = r;
      void p.then(() => r());
    });
  const loop = (async () => {
    await until(Promise.all(fleet.map((r) => r.ready)));
    while (!stopped) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await until(new Promise((r) => (timer = setTimeout(r, o.minMs + random() * (o.maxMs - o.minMs)))));
      clearTimeout(timer);
      if (stopped) break;
      // A runner that ended on its own (reported by stop()) is replaced, so the fleet stays whole.
      for (const [i, r] of fleet.entries()) if (r.died) fleet[i] = start();
      const busy = fleet.filter((r) => r.busy);
      const pool = busy.length > 0 && o.preferBusy !== false ? busy : fleet;
      const victim = pool[Math.floor(random() * pool.length)]!;
      if (victim.busy) stats.busyKills++;
      victim.kill();
      stats.kills++;
      const replacement = start();
      fleet.splice(fleet.indexOf(victim), 1, replacement);
      await until(replacement.ready);
    }
  })();
  return {
    stats,
    async stop(): Promise<string[]> {
      stopped = true;
      wake();
      await loop;
      for (const r of fleet) r.kill();
      return all.flatMap((r) => (r.died ? [r.died] : []));
    },
  };
}
