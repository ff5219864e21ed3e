/**
 * A runner checks the runner protocol the service announces (`/version` `x-runner_protocol`)
 * before it registers, and refuses to work for a service of another major version, saying why:
 * the shared Runner (browser tabs and Node), and the Node runner process, which exits with 1.
 */
import { spawn } from "node:child_process";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { RunnerClient } from "../../client/index";
import { RUNNER_PROTOCOL_VERSION, runnerProtocolMismatch } from "../../protocol";
import { Runner, type RunnerHost, RunnerProtocolMismatch, type RunnerStatus } from "./runner";

/**
 * A service that speaks runner protocol `protocol` (undefined: announces none) and knows no runner
 * after its first registration (every lease answers 404, as after a reset), switching to `after`.
 */
function service(protocol: string | undefined, after = protocol) {
  const seen = { registrations: 0, leases: 0 };
  const handle = (method: string, path: string): Response => {
    if (method === "GET" && path === "/version") {
      const announced = seen.registrations === 0 ? protocol : after;
      return Response.json({ service: "test", backend: null, ...(announced === undefined ? {} : { "x-runner_protocol": announced }) });
    }
    if (method === "POST" && path === "/v1/runners") {
      seen.registrations++;
      return Response.json({ runner_id: `R${seen.registrations}`, rv_id: "v", service_rv_id: "v" }, { status: 201 });
    }
    if (method === "POST" && path.endsWith(":lease")) {
      seen.leases++;
      return Response.json(
        { type: "about:blank", title: "Not Found", status: 404, detail: "no such runner", instance: path },
        { status: 404, headers: { "Content-Type": "application/problem+json" } },
      );
    }
    return new Response(null, { status: 500 });
  };
  const fetch = async (req: Request) => handle(req.method, new URL(req.url).pathname);
  return { seen, handle, fetch };
}

const host = { name: "test", runtimeVersions: {}, abilities: {}, engines: { release: () => undefined } } as unknown as RunnerHost;
const runnerFor = (s: ReturnType<typeof service>, statuses: RunnerStatus[] = [], logs: string[] = []) =>
  new Runner(new RunnerClient({ baseUrl: "http://service.test", fetch: s.fetch, retries: 0 }), host, {
    leaseWaitSeconds: 0,
    onStatus: (st) => statuses.push(st),
    onLog: (line) => logs.push(line),
  });

describe("the runner protocol version", () => {
  it("only a major difference is a mismatch; the message names both versions and what to do", () => {
    expect(runnerProtocolMismatch("1", "1")).toBeNull();
    expect(runnerProtocolMismatch("1.3", "1")).toBeNull();
    expect(runnerProtocolMismatch("1", "1.2")).toBeNull();
    expect(runnerProtocolMismatch("2", "1")).toBe(
      "the service speaks runner protocol 2, this runner 1: update this runner (reload the page, or install the service's release)",
    );
    expect(runnerProtocolMismatch("1", "2")).toBe(
      "the service speaks runner protocol 1, this runner 2: run the runner of the service's release",
    );
    expect(runnerProtocolMismatch(undefined, "1")).toMatch(/^the service announces no runner protocol, this runner 1: /);
  });

  it("a runner registers with a service of its major version, whatever the minor", async () => {
    const s = service(`${RUNNER_PROTOCOL_VERSION}.7`);
    const resource = await runnerFor(s).register();
    expect(resource.runner_id).toBe("R1");
    expect(s.seen.registrations).toBe(1);
  });

  it.each([[`${Number(RUNNER_PROTOCOL_VERSION) + 1}`], [undefined]])(
    "a runner refuses to start for a service that announces %s, says why and never registers",
    async (announced) => {
      const s = service(announced);
      const logs: string[] = [];
      const run = runnerFor(s, [], logs).run();
      await expect(run).rejects.toBeInstanceOf(RunnerProtocolMismatch);
      await expect(run).rejects.toThrow(runnerProtocolMismatch(announced)!);
      expect(s.seen).toEqual({ registrations: 0, leases: 0 });
      expect(logs).toEqual([`[runner test] cannot start: ${runnerProtocolMismatch(announced)}`]);
    },
  );

  it("a running runner that the service forgot, and that now speaks another major version, stops with the reason", async () => {
    const next = `${Number(RUNNER_PROTOCOL_VERSION) + 1}`;
    const s = service(RUNNER_PROTOCOL_VERSION, next);
    const statuses: RunnerStatus[] = [];
    await runnerFor(s, statuses).run();
    expect(s.seen).toEqual({ registrations: 1, leases: 1 });
    expect(statuses).toEqual([{ state: "stopped", refused: runnerProtocolMismatch(next) }]);
  });

  it("the Node runner process exits with 1 and prints the reason, without registering", async () => {
    const next = `${Number(RUNNER_PROTOCOL_VERSION) + 1}`;
    const s = service(next);
    const server: Server = createServer((req, res) => {
      const answer = s.handle(req.method!, new URL(req.url!, "http://x").pathname);
      void answer.text().then((body) => {
        res.writeHead(answer.status, { "Content-Type": answer.headers.get("Content-Type") ?? "application/json" });
        res.end(body);
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const child = spawn(process.execPath, ["--import", "tsx", "browser-runtime/runner/node-main.ts", base, "old"], {
        cwd: new URL("../..", import.meta.url).pathname,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      child.stdout.on("data", (d: Buffer) => (out += d.toString()));
      child.stderr.on("data", (d: Buffer) => (err += d.toString()));
      const code = await new Promise<number | null>((r) => child.on("exit", r));
      expect(code, err).toBe(1);
      expect(out).toContain(`[runner old] cannot start: ${runnerProtocolMismatch(next)}`);
      expect(err).not.toMatch(/\bat \S+:\d+/); // no stack trace
      expect(s.seen.registrations).toBe(0);
    } finally {
      server.close();
    }
  });
});
