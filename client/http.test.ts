import { describe, expect, it } from "vitest";
import { type FetchLike, ProblemError, RunnerClient, Transport } from "./index.js";

/** A fetch that answers from a script, one entry per call, and counts the calls. */
function scripted(...answers: (number | "network")[]): FetchLike & { calls: number; seen: Request[] } {
  const f = Object.assign(
    async (request: Request) => {
      f.seen.push(request);
      const a = answers[Math.min(f.calls++, answers.length - 1)]!;
      if (a === "network") throw new TypeError("fetch failed");
      return new Response(a === 200 ? "{}" : "", { status: a, headers: a === 200 ? { "Content-Type": "application/json" } : {} });
    },
    { calls: 0, seen: [] as Request[] },
  );
  return f;
}

const send = (f: FetchLike, method: string, idempotent?: boolean) =>
  new Transport({ baseUrl: "http://x", fetch: f }).send(
    new Request("http://x/a", { method, body: method === "GET" ? null : "body" }),
    idempotent,
  );

describe("Transport.send", () => {
  it("sends an idempotent request again after a transient 503 from the infrastructure, body and all", async () => {
    const f = scripted(503, 200);
    expect((await send(f, "PUT")).status).toBe(200);
    expect(f.calls).toBe(2);
    expect(await f.seen[1]!.text()).toBe("body");
  });

  it("hands a non-idempotent request's 503 back at once: a repeat could apply it twice", async () => {
    const f = scripted(503, 200);
    expect((await send(f, "POST")).status).toBe(503);
    expect(f.calls).toBe(1);
  });

  it("sends a POST the protocol makes harmless to repeat again after a 503", async () => {
    const f = scripted(503, 200);
    expect((await send(f, "POST", true)).status).toBe(200);
    expect(f.calls).toBe(2);
  });

  it("sends any request again when the network failed before an answer, or the answer was 429 (not applied)", async () => {
    for (const first of ["network", 429] as const) {
      const f = scripted(first, 200);
      expect((await send(f, "POST")).status).toBe(200);
      expect(f.calls).toBe(2);
    }
  });

  it("never retries the service's own verdicts", async () => {
    const f = scripted(409, 200);
    expect((await send(f, "PUT")).status).toBe(409);
    expect(f.calls).toBe(1);
  });

  it("gives up after its retries and answers the last status", async () => {
    const f = scripted(503);
    expect((await new Transport({ fetch: f, retries: 2 }).send(new Request("http://x/a"))).status).toBe(503);
    expect(f.calls).toBe(3);
  });

  it("an abort ends the backoff at once with the signal's reason", async () => {
    const abort = new AbortController();
    const f = scripted(503);
    const sent = new Transport({ fetch: f }).send(new Request("http://x/a", { signal: abort.signal }));
    abort.abort(new Error("stopped"));
    await expect(sent).rejects.toThrow("stopped");
    expect(f.calls).toBe(1);
  });

  it("adds the credential, asked at each request", async () => {
    let key = "Bearer one";
    const f = scripted(200);
    const t = new Transport({ fetch: f, authorization: () => key });
    await t.send(new Request("http://x/a"));
    key = "Bearer two";
    await t.send(new Request("http://x/a"));
    expect(f.seen.map((r) => r.headers.get("Authorization"))).toEqual(["Bearer one", "Bearer two"]);
  });
});

describe("ProblemError", () => {
  it("carries the problem+json body: status, slug, detail, field errors", async () => {
    const body = {
      type: "http://x/errors/validation",
      title: "Validation failed",
      status: 422,
      detail: "bad",
      instance: "/v1/p",
      errors: [{ path: "name", message: "required", code: "invalid_type" }],
    };
    const res = new Response(JSON.stringify(body), { status: 422, headers: { "Content-Type": "application/problem+json" } });
    const e = await ProblemError.of(res, "/v1/p");
    expect(e).toMatchObject({ status: 422, slug: "validation", message: "Validation failed: bad" });
    expect(e.problem.errors?.[0]?.path).toBe("name");
  });

  it("describes an answer that is not problem+json (a proxy's page) by its status", async () => {
    const e = await ProblemError.of(new Response("<html>bad gateway</html>", { status: 502, statusText: "Bad Gateway" }), "/v1/x");
    expect(e.problem).toEqual({
      type: "about:blank",
      title: "HTTP 502 Bad Gateway",
      status: 502,
      instance: "/v1/x",
      detail: "<html>bad gateway</html>",
    });
  });
});

describe("RunnerClient", () => {
  it("a checkpoint stored while the service restarts succeeds on the next attempt instead of failing the task", async () => {
    const f = scripted(503, 200);
    await new RunnerClient({ baseUrl: "http://x", fetch: f }).putCheckpoint("L", { blob_sha: "0".repeat(64), byte_size: 1, summary: {} });
    expect(f.calls).toBe(2);
  });

  it("a heartbeat (a POST the protocol makes idempotent) is retried; an events post is not", async () => {
    const beat = scripted(503, 200);
    await new RunnerClient({ baseUrl: "http://x", fetch: beat }).heartbeat("L");
    expect(beat.calls).toBe(2);
    const post = scripted(503, 200);
    await expect(new RunnerClient({ baseUrl: "http://x", fetch: post }).postEvents("L", [])).rejects.toBeInstanceOf(ProblemError);
    expect(post.calls).toBe(1);
  });
});
