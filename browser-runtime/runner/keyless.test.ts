/**
 * A browser runner without a key (`/runner.html` with no `?key=`, the demo's "Lend compute" with
 * no token): the service refuses it as a tenant runner in `api_key` mode (401), so it asks for its
 * address's keyless volunteer token and registers in the pool with it, then leases with it
 * (runners.md "Who may run what"; the service side: worker/routes/runner-credentials.test.ts).
 */
import { describe, expect, it } from "vitest";
import { RunnerClient } from "../../client/index";
import { RUNNER_PROTOCOL_VERSION } from "../../protocol";
import { Runner, type RunnerHost } from "./runner";

const TOKEN = "sfr_01JABCDEFGHJKMNPQRSTVWXYZ0_secret";
const problem = (status: number, detail: string) =>
  new Response(JSON.stringify({ type: "about:blank", title: "Authentication required", status, detail, instance: "/" }), {
    status,
    headers: { "Content-Type": "application/problem+json" },
  });

/** The service in `api_key` mode, keyless volunteers allowed or not: what each request carried. */
function service(allowKeyless: boolean) {
  const seen: string[] = [];
  const fetch = async (req: Request) => {
    const auth = req.headers.get("Authorization");
    const path = new URL(req.url).pathname;
    // Public, as /version is in every mode; the runner reads it before registering (protocol-version.test.ts).
    if (path === "/version") return Response.json({ service: "test", backend: null, "x-runner_protocol": RUNNER_PROTOCOL_VERSION });
    seen.push(`${req.method} ${path} ${auth ?? "-"}`);
    if (path === "/v1/runner-tokens")
      return allowKeyless
        ? Response.json({ token_id: "T", name: "keyless volunteer", raw_token: TOKEN }, { status: 201 })
        : problem(403, "this deployment does not accept volunteers without a runner token (SVC_POOL_KEYLESS_RUNNERS is off)");
    if (auth !== `Bearer ${TOKEN}`) return problem(401, "this deployment requires 'Authorization: Bearer <API key>'");
    if (path === "/v1/runners") return Response.json({ runner_id: "R", pool: true, rv_id: "v", service_rv_id: "v" }, { status: 201 });
    return new Response(null, { status: 204 });
  };
  return { seen, client: new RunnerClient({ baseUrl: "http://service", fetch, retries: 0 }) };
}

const host = { name: "tab", runtimeVersions: {}, abilities: {}, engines: { release: () => undefined } } as unknown as RunnerHost;

describe("a keyless browser runner", () => {
  it("takes its address's volunteer token when refused without a key, and uses it from then on", async () => {
    const { seen, client } = service(true);
    const runner = new Runner(client, host, { keyless: true });
    expect((await runner.register()).pool).toBe(true);
    await client.lease("R");
    expect(seen).toEqual([
      "POST /v1/runners -",
      "POST /v1/runner-tokens -",
      `POST /v1/runners Bearer ${TOKEN}`,
      `POST /v1/runners/R:lease Bearer ${TOKEN}`,
    ]);
  });

  it("says why when the operator allows no keyless volunteers", async () => {
    const { client } = service(false);
    await expect(new Runner(client, host, { keyless: true }).register()).rejects.toThrow(/SVC_POOL_KEYLESS_RUNNERS is off/);
  });

  it("stays a tenant runner unless asked: the 401 is the answer", async () => {
    const { seen, client } = service(true);
    await expect(new Runner(client, host).register()).rejects.toMatchObject({ status: 401 });
    expect(seen).toEqual(["POST /v1/runners -"]);
  });
});
