/**
 * @module The local stack (scripts/local-stack.ts) in a process of its own with its state on disk,
 * for fault tests: `kill()` ends it at once (SIGKILL to its process group: this Node process and
 * its workerd), as a machine that loses power, and a new one started on the same directory finds
 * the state the first one left. Run as a program, it starts the stack and prints `ready <origin>`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { startLocalStack } from "../../scripts/local-stack";

export interface StackProcess {
  base: string;
  /** Ends the stack with SIGKILL, mid-request if one is under way. */
  kill(): void;
}

const self = new URL(import.meta.url).pathname;

/** Starts the stack on `stateDir` (created by the first start, reused by the next) with `vars` over wrangler.toml's. */
export async function startStackProcess(stateDir: string, vars: Record<string, string>): Promise<StackProcess> {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", self, stateDir, JSON.stringify(vars)], {
    cwd: new URL("../../", import.meta.url).pathname,
    stdio: ["ignore", "pipe", "inherit"],
    // Its own process group, so a kill reaches its workerd too.
    detached: true,
  });
  const kill = () => {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // already gone
    }
  };
  const base = await new Promise<string | null>((resolve) => {
    // Lines after `ready` are read and dropped, so the process never blocks on a full pipe.
    createInterface({ input: child.stdout! })
      .on("line", (line) => {
        const ready = /^ready (\S+)$/.exec(line);
        if (ready) resolve(ready[1]!);
      })
      .on("close", () => resolve(null));
  });
  if (base) return { base, kill };
  kill();
  throw new Error("the stack process ended before it was ready");
}

if (process.argv[1] === self) {
  const [stateDir, vars] = process.argv.slice(2);
  const stack = await startLocalStack(JSON.parse(vars!), { persistTo: stateDir! });
  console.log(`ready ${stack.base}`);
  process.on("SIGTERM", () => void stack.stop().then(() => process.exit(0)));
}
