/**
 * @module The server under test: `CONFORMANCE_BASE_URL` when set (a running deployment), else the
 * real local stack started from wrangler.toml by wrangler's `unstable_startWorker` (workerd with
 * Durable Objects and R2 in memory, on a free loopback port).
 */
import { unstable_startWorker } from "wrangler";

export interface Server {
  base: string;
  stop(): Promise<void>;
}

/** `vars` override wrangler.toml's `[vars]` of the local stack (a running deployment keeps its own). */
export async function startServer(vars: Record<string, string> = {}): Promise<Server> {
  const given = process.env.CONFORMANCE_BASE_URL;
  if (given) return { base: given.replace(/\/$/, ""), stop: async () => {} };
  // Offline, wrangler would log a stack trace on every start fetching Request.cf data.
  process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= "false";
  const worker = await unstable_startWorker({
    config: "wrangler.toml",
    dev: { server: { hostname: "127.0.0.1", port: 0 }, inspector: false, persist: false, watch: false, logLevel: "warn" },
    bindings: Object.fromEntries(Object.entries(vars).map(([k, value]) => [k, { type: "plain_text" as const, value }])),
  });
  await worker.ready;
  const url = await worker.url;
  return { base: url.origin, stop: () => worker.dispose() };
}
