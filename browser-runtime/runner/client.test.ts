import { describe, expect, it } from "vitest";
import { type FetchLike, RunnerClient, sendRetrying } from "./client";

/** A fetch that answers from a script, one entry per call, and counts the calls. */
function scripted(...answers: (number | "network")[]): FetchLike & { calls: number } {
  const f = Object.assign(
    async () => {
      const a = answers[Math.min(f.calls++, answers.length - 1)]!;
      if (a === "network") throw new TypeError("fetch failed");
      return new Response(a === 200 ? "{}" : "", { status: a, headers: a === 200 ? { "Content-Type": "application/json" } : {} });
    },
    { calls: 0 },
  );
  return f;
}

describe("sendRetrying", () => {
  it("sends an idempotent request again after a transient 503 from the infrastructure", async () => {
    const f = scripted(503, 200);
    expect((await sendRetrying(f, "http://x/a", { method: "PUT" }, true)).status).toBe(200);
    expect(f.calls).toBe(2);
  });

  it("hands a non-idempotent request's 503 back at once: a repeat could apply it twice", async () => {
    const f = scripted(503, 200);
    expect((await sendRetrying(f, "http://x/a", { method: "POST" })).status).toBe(503);
    expect(f.calls).toBe(1);
  });

  it("sends any request again when the network failed before an answer", async () => {
    const f = scripted("network", 200);
    expect((await sendRetrying(f, "http://x/a", { method: "POST" })).status).toBe(200);
    expect(f.calls).toBe(2);
  });

  it("never retries the service's own verdicts", async () => {
    const f = scripted(409, 200);
    expect((await sendRetrying(f, "http://x/a", { method: "PUT" }, true)).status).toBe(409);
    expect(f.calls).toBe(1);
  });
});

describe("RunnerClient", () => {
  it("a checkpoint stored while the service restarts succeeds on the next attempt instead of failing the task", async () => {
    const f = scripted(503, 200);
    const client = new RunnerClient({ base: "http://x", fetch: f });
    await client.putCheckpoint("L", { blob_sha: "0".repeat(64), byte_size: 1, summary: {} });
    expect(f.calls).toBe(2);
  });
});
