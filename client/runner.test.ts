// What the runner protocol's client sends for an output blob: images with their media type (the
// service reads their size), anything else as bytes, never as a JSON request (which the service
// caps at SVC_MAX_JSON_BYTES: an images.json output of a large model passes that).
// And how it asks for multi-shard leases with their inputs by reference, and fills them back.
import { describe, expect, it } from "vitest";
import { EdgeSfmClient, RunnerClient } from "./index.js";

describe("RunnerClient.writeBlob", () => {
  it("sends images with their media type and everything else as octet-stream", async () => {
    const types: (string | null)[] = [];
    const client = new EdgeSfmClient({
      baseUrl: "http://runner.test",
      fetch: async (request: Request) => {
        types.push(request.headers.get("Content-Type"));
        return new Response(JSON.stringify({ blob_sha: "0".repeat(64), byte_size: 1 }), {
          status: 201,
          headers: { "Content-Type": "application/json" },
        });
      },
    });
    await client.runner.writeBlob("a.b.c.d", new Uint8Array([1]), "image/jpeg");
    await client.runner.writeBlob("a.b.c.d", new Uint8Array([2]), "application/json");
    await client.runner.writeBlob("a.b.c.d", new Uint8Array([3]));
    expect(types).toEqual(["image/jpeg", "application/octet-stream", "application/octet-stream"]);
  });
});

describe('multi-shard leases with inputs by reference (x-inputs_by_ref, runners.md "Inputs by reference")', () => {
  const inputs = (name: string) => ({ dataset: null, upstream: [], artifacts: { source: { name } } });
  const lease = (id: string, leaseInputs: unknown) => ({
    lease_id: id,
    runner_id: "01J00000000000000000000000",
    expires_at: "2026-11-27T00:00:00Z",
    ttl_seconds: 60,
    task: { task_id: "t", job_id: "j", kind: "extract", phase: "extracting_features", attempt: 1, params: {} },
    inputs: leaseInputs,
    checkpoint: null,
    shard: null,
    _links: {},
  });
  /** A runner client whose service answers `answer` to everything, recording what it was sent. */
  const serving = (answer: unknown, options?: { inputsByRef?: boolean }) => {
    const sent: { url: string; body: string }[] = [];
    const client = new RunnerClient(
      {
        baseUrl: "http://runner.test",
        fetch: async (request: Request) => {
          sent.push({ url: request.url, body: await request.text() });
          return new Response(JSON.stringify(answer), { status: 200, headers: { "Content-Type": "application/json" } });
        },
      },
      options,
    );
    return { client, sent };
  };

  it("asks for them on a multi-shard lease and its batch completion, and fills each reference back with the named lease's inputs", async () => {
    const a = inputs("a");
    const b = inputs("b");
    const answer = {
      ...lease("L1", a),
      "x-more_leases": [
        lease("L2", { "x-inputs_of": "L1" }),
        lease("L3", b),
        lease("L4", { "x-inputs_of": "L3" }),
        lease("L5", { "x-inputs_of": "L2" }),
      ],
    };
    const { client, sent } = serving(answer);
    const leases = await client.leaseBatch("r", 0, 5);
    expect(new URL(sent[0]!.url).searchParams.get("x-inputs_by_ref")).toBe("true");
    expect(leases.map((l) => l.lease_id)).toEqual(["L1", "L2", "L3", "L4", "L5"]);
    expect(leases.map((l) => l.inputs)).toEqual([a, a, b, b, a]);
    // Shared, not copied: every lease of a task reads the one inputs object the answer carried.
    expect(leases[1]!.inputs).toBe(leases[0]!.inputs);
    expect(leases.every((l) => !("x-more_leases" in l))).toBe(true);

    const batch = serving({ completions: [{ lease_id: "L0", problem: null }], "x-lease": answer });
    const done = await batch.client.completeLeases("r", [{ lease_id: "L0", outputs: { artifacts: [], result: null } }], {
      leaseNext: true,
      maxLeases: 5,
    });
    expect(JSON.parse(batch.sent[0]!.body)).toMatchObject({ "x-lease_next": true, "x-max_leases": 5, "x-inputs_by_ref": true });
    expect(done.next.map((l) => l.inputs)).toEqual([a, a, b, b, a]);
  });

  it("a runner that opts out (inputsByRef: false), or asks for one lease, does not ask", async () => {
    const optedOut = serving(lease("L1", inputs("a")), { inputsByRef: false });
    await optedOut.client.leaseBatch("r", 0, 4);
    expect(new URL(optedOut.sent[0]!.url).searchParams.has("x-inputs_by_ref")).toBe(false);
    const batch = serving({ completions: [], "x-lease": null }, { inputsByRef: false });
    await batch.client.completeLeases("r", [{ lease_id: "L0", outputs: { artifacts: [], result: null } }], {
      leaseNext: true,
      maxLeases: 4,
    });
    expect(JSON.parse(batch.sent[0]!.body)).not.toHaveProperty("x-inputs_by_ref");
    const single = serving(lease("L1", inputs("a")));
    await single.client.lease("r");
    expect(new URL(single.sent[0]!.url).searchParams.has("x-inputs_by_ref")).toBe(false);
  });

  it("a reference to no earlier lease of the answer (unknown, or a later one) is an error naming both leases", async () => {
    const unknown = serving({ ...lease("L1", inputs("a")), "x-more_leases": [lease("L2", { "x-inputs_of": "L9" })] });
    await expect(unknown.client.leaseBatch("r", 0, 2)).rejects.toThrow(/lease L2 names the inputs of lease L9/);
    const later = serving({
      ...lease("L1", inputs("a")),
      "x-more_leases": [lease("L2", { "x-inputs_of": "L3" }), lease("L3", inputs("b"))],
    });
    await expect(later.client.leaseBatch("r", 0, 3)).rejects.toThrow(/lease L2 names the inputs of lease L3/);
  });
});
