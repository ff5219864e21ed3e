/**
 * @module The fuzz run: seeded requests over every operation of the document (fast-check picks
 * operation, mutation and values; a seed replays a run exactly), each answer judged (oracle.ts),
 * every rejected write checked to have changed no row and no blob, and the service asked at the
 * end whether it still answers. Transport-agnostic: a `FuzzTarget` sends requests and, where it
 * can see storage, digests it.
 */
import fc from "fast-check";
import { type OpenApiDocument, operationsOf } from "./operations";
import { judge } from "./oracle";
import { type Fixture, type FuzzRequest, requestOf, strayRequest } from "./requests";

export interface FuzzAnswer {
  status: number;
  contentType: string;
  body: string;
}

export interface FuzzTarget {
  send(req: FuzzRequest): Promise<FuzzAnswer>;
  /** A digest of every stored row and blob, by table (or bucket); absent when storage cannot be seen. */
  state?(): Promise<Record<string, string>>;
  /** Whether the service still answers correctly (after the run). */
  alive(): Promise<boolean>;
}

export interface Failure {
  fault: string;
  count: number;
  /** The first request that showed it, enough to replay it by hand. */
  example: { method: string; target: string; mutation: string; headers: Record<string, string>; body: string; detail: string };
}

export interface FuzzReport {
  seed: number;
  requests: number;
  statuses: Record<number, number>;
  serverErrors: number;
  mutations: Record<string, number>;
  failures: Failure[];
  /** Answers the document does not list for their operation (a gap in /openapi.json, reported, not failed). */
  undocumented: Failure[];
  alive: boolean;
  seconds: number;
}

/** Runs `requests` fuzz requests against `target` and reports; it never stops at a failure. */
export async function fuzz(
  doc: OpenApiDocument,
  fixture: Fixture,
  target: FuzzTarget,
  o: { requests: number; seed: number },
): Promise<FuzzReport> {
  const started = Date.now();
  const ops = operationsOf(doc);
  const components = doc.components?.schemas ?? {};
  const arb = fc.oneof(...ops.map((op) => requestOf(op, ops, fixture, components)), strayRequest());
  const report: FuzzReport = {
    seed: o.seed,
    requests: 0,
    statuses: {},
    serverErrors: 0,
    mutations: {},
    failures: [],
    undocumented: [],
    alive: false,
    seconds: 0,
  };
  const failures = new Map<string, Failure>();
  const undocumented = new Map<string, Failure>();
  const record = (req: FuzzRequest, fault: string, detail: string, into = failures) => {
    const known = into.get(fault);
    if (known) return void (known.count += 1);
    const body = typeof req.body === "string" ? req.body.slice(0, 400) : req.body ? `<${req.body.length} bytes>` : "";
    const headers = Object.fromEntries(
      Object.entries(req.headers).map(([k, v]) => [k, v.length > 200 ? `${v.slice(0, 40)}...(${v.length})` : v]),
    );
    into.set(fault, {
      fault,
      count: 1,
      example: { method: req.method, target: req.target.slice(0, 400), mutation: req.mutation.slice(0, 200), headers, body, detail },
    });
  };
  let known: Record<string, string> | null = null;
  await fc.assert(
    fc.asyncProperty(arb, async (req) => {
      const writes = req.method !== "GET";
      if (writes && target.state && !known) known = await settled(target.state);
      const answer = await target.send(req);
      report.requests += 1;
      report.statuses[answer.status] = (report.statuses[answer.status] ?? 0) + 1;
      const kind = req.mutation.split(":")[0]!;
      report.mutations[kind] = (report.mutations[kind] ?? 0) + 1;
      if (answer.status >= 500 && answer.status !== 501) report.serverErrors += 1;
      const verdict = judge(req, answer);
      if (verdict) record(req, verdict.fault, verdict.detail, verdict.undocumented ? undocumented : failures);
      if (writes && target.state && answer.status >= 400) {
        const now = await target.state();
        const changed = Object.keys({ ...known, ...now }).filter((k) => known![k] !== now[k]);
        if (changed.length)
          record(
            req,
            `${req.op ? `${req.op.method} ${req.op.path}` : req.method} [${kind}]: a rejected request (${answer.status}) changed ${changed.join(", ")}`,
            answer.body.slice(0, 300),
          );
        known = now;
      } else {
        // A write that succeeded, or a read, which may fill a cache whatever it answers (a snapshot's tiles
        // are built on the first tile asked for, also one that does not exist: 404): storage may have changed.
        known = null;
      }
      return true;
    }),
    { numRuns: o.requests, seed: o.seed, endOnFailure: true },
  );
  report.alive = await target.alive();
  report.failures = [...failures.values()].sort((a, b) => b.count - a.count);
  report.undocumented = [...undocumented.values()].sort((a, b) => a.fault.localeCompare(b.fault));
  report.seconds = (Date.now() - started) / 1000;
  return report;
}

/**
 * Storage once it stops changing: a write that succeeded may go on in the background (a new job
 * offers its tasks to the queue and indexes its status after the answer), which must not be taken
 * for the effect of the next request.
 */
async function settled(state: () => Promise<Record<string, string>>): Promise<Record<string, string>> {
  let last = await state();
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 20));
    const now = await state();
    if (JSON.stringify(now) === JSON.stringify(last)) return now;
    last = now;
  }
  return last;
}

/** The report as the fuzz command prints it. */
export function formatReport(r: FuzzReport): string {
  const lines = [
    `fuzz: ${r.requests} requests (seed ${r.seed}) in ${r.seconds.toFixed(1)} s; 5xx: ${r.serverErrors}; distinct failures: ${r.failures.length}; still answering: ${r.alive ? "yes" : "NO"}`,
    `  statuses: ${Object.entries(r.statuses)
      .map(([s, n]) => `${s}x${n}`)
      .join(" ")}`,
    `  mutations: ${Object.entries(r.mutations)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([m, n]) => `${m} ${n}`)
      .join(", ")}`,
  ];
  for (const f of r.failures) {
    lines.push(`  FAIL (${f.count}x) ${f.fault}`);
    lines.push(
      `    e.g. ${f.example.method} ${f.example.target} [${f.example.mutation}] ${JSON.stringify(f.example.headers)} ${f.example.body}`,
    );
    if (f.example.detail) lines.push(`    -> ${f.example.detail.replace(/\s+/g, " ").slice(0, 300)}`);
  }
  if (r.undocumented.length)
    lines.push(
      `  answers /openapi.json does not list (${r.undocumented.length}):`,
      ...r.undocumented.map((f) => `    ${f.fault} (${f.count}x, e.g. ${f.example.method} ${f.example.target.slice(0, 120)})`),
    );
  return lines.join("\n");
}
