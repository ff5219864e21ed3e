/**
 * @module The whole API in this process: wrangler's `unstable_startWorker` runs the Worker of
 * wrangler.toml in workerd, with its Durable Objects and R2 in memory (or in a directory), on a free loopback port.
 * What `npm run reconstruct` and the benchmarks start when no server is given, what the client's
 * types are generated from, and what the HTTP suites test.
 */
import { unstable_startWorker } from "wrangler";

export interface LocalStack {
  /** The origin, e.g. `http://127.0.0.1:40123`. */
  base: string;
  stop(): Promise<void>;
}

/** `vars` override wrangler.toml's `[vars]`; `persistTo`: keep the state (Durable Objects, R2) in this directory, across restarts. */
export async function startLocalStack(vars: Record<string, string> = {}, o: { persistTo?: string } = {}): Promise<LocalStack> {
  // Offline, wrangler would log a stack trace on every start fetching Request.cf data.
  process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= "false";
  const worker = await unstable_startWorker({
    config: new URL("../wrangler.toml", import.meta.url).pathname,
    dev: { server: { hostname: "127.0.0.1", port: 0 }, inspector: false, persist: o.persistTo ?? false, watch: false, logLevel: "warn" },
    bindings: Object.fromEntries(Object.entries(vars).map(([k, value]) => [k, { type: "plain_text" as const, value }])),
  });
  await worker.ready;
  const url = await worker.url;
  return { base: url.origin, stop: () => worker.dispose() };
}
