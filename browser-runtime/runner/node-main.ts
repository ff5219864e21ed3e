// A runner as a Node process: `npx tsx browser-runtime/runner/node-main.ts <server> [name]`
// (RUNNER_AUTHORIZATION for api_key mode or a pool token; RUNNER_STAGES to limit its stages;
// RUNNER_ENGINE_WORKERS to compute on that many engines at once instead of one per core).
// Computes on the CPU (wasm); prints one line per protocol step so a parent can follow it.
import type { TaskKind } from "../../protocol";
import { RunnerClient } from "../../client/index";
import { nodeRunnerHost } from "./node-host";
import { Runner, RunnerProtocolMismatch } from "./runner";

const [server, name] = process.argv.slice(2);
if (!server) {
  console.error("usage: tsx browser-runtime/runner/node-main.ts <server url> [name]");
  process.exit(2);
}
const engineWorkers = Number(process.env.RUNNER_ENGINE_WORKERS) || undefined;
const stages = process.env.RUNNER_STAGES?.split(",").filter(Boolean) as TaskKind[] | undefined;
const runner = new Runner(
  new RunnerClient({ baseUrl: server, authorization: process.env.RUNNER_AUTHORIZATION }),
  await nodeRunnerHost(name ?? "node-runner", engineWorkers ? { engineWorkers } : {}),
  { ...(stages ? { stages } : {}), onLog: (line) => console.log(line) },
);
process.on("SIGTERM", () => runner.stop());
try {
  await runner.run();
} catch (e) {
  // The runner logged why (another major runner protocol): exit without a stack trace.
  if (!(e instanceof RunnerProtocolMismatch)) throw e;
  process.exitCode = 1;
}
