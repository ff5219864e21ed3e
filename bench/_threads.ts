/**
 * Per-thread CPU of processes from /proc (Linux): what a benchmark on a shared machine can measure
 * where wall times are noisy. `threadCpu(pid)` reads each thread's user + system time;
 * `threadCpuDelta` subtracts two readings, grouping threads by name (a process's main thread is
 * named by its command, its worker threads by their own names: `node`'s libuv pool `libuv-worker`,
 * libvips `vips-*`, ...).
 */
import { readFileSync, readdirSync } from "node:fs";

/** USER_HZ of /proc's times: 100 on every Linux architecture Node runs on. */
const TICKS_PER_SECOND = 100;

export interface ThreadCpu {
  name: string;
  /** The process's own thread (tid = pid). */
  main: boolean;
  seconds: number;
  /** Seconds it was ready to run but waited for a CPU (schedstat's run-queue time; 0 where the kernel does not say). */
  waitSeconds: number;
}

/** Every live thread of `pid`: its name and CPU seconds so far; empty once the process is gone or without /proc. */
export function threadCpu(pid: number): Map<number, ThreadCpu> {
  const threads = new Map<number, ThreadCpu>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return threads;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      // Fields after the parenthesised name: state(3) ppid ... utime(14) stime(15).
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      let waitSeconds = 0;
      try {
        waitSeconds = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[1]) / 1e9;
      } catch {
        // no schedstat in this kernel
      }
      threads.set(Number(tid), {
        name,
        main: Number(tid) === pid,
        seconds: (Number(f[11]) + Number(f[12])) / TICKS_PER_SECOND,
        waitSeconds,
      });
    } catch {
      // The thread ended meanwhile.
    }
  }
  return threads;
}

/**
 * CPU seconds spent between two readings of one process, by thread name (`main` for the process's
 * own thread), and the seconds its main thread waited for a CPU (`main_wait`); threads that started
 * in between count from zero, threads that ended are lost.
 */
export function threadCpuDelta(before: Map<number, ThreadCpu>, after: Map<number, ThreadCpu>): Record<string, number> {
  const byName: Record<string, number> = {};
  for (const [tid, t] of after) {
    const key = t.main ? "main" : t.name.replace(/[-_ ]?\d+$/, "");
    byName[key] = (byName[key] ?? 0) + t.seconds - (before.get(tid)?.seconds ?? 0);
    if (t.main) byName.main_wait = t.waitSeconds - (before.get(tid)?.waitSeconds ?? 0);
  }
  for (const key of Object.keys(byName)) byName[key] = Number(byName[key]!.toFixed(2));
  return byName;
}

/** The pids of this process's descendants whose command name is `name` (e.g. `workerd`). */
export function descendants(name: string, of = process.pid): number[] {
  const parent = new Map<number, { ppid: number; name: string }>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      parent.set(Number(entry), { ppid: Number(f[1]), name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) });
    } catch {
      // exited meanwhile
    }
  }
  const under = (pid: number) => {
    for (let p = parent.get(pid)?.ppid ?? 0; p > 1; p = parent.get(p)?.ppid ?? 0) if (p === of) return true;
    return false;
  };
  return [...parent].filter(([pid, s]) => s.name === name && under(pid)).map(([pid]) => pid);
}
