/**
 * @module The server under test: `CONFORMANCE_BASE_URL` when set (a running deployment), else the
 * real local stack (scripts/local-stack.ts: workerd from wrangler.toml on a free loopback port).
 */
import { type LocalStack, startLocalStack } from "../../scripts/local-stack";

export type Server = LocalStack;

/** `vars` override wrangler.toml's `[vars]` of the local stack (a running deployment keeps its own). */
export async function startServer(vars: Record<string, string> = {}): Promise<Server> {
  const given = process.env.CONFORMANCE_BASE_URL;
  if (given) return { base: given.replace(/\/$/, ""), stop: async () => {} };
  return startLocalStack(vars);
}
