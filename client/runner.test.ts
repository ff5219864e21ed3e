// What the runner protocol's client sends for an output blob: images with their media type (the
// service reads their size), anything else as bytes, never as a JSON request (which the service
// caps at SVC_MAX_JSON_BYTES: an images.json output of a large model passes that).
import { describe, expect, it } from "vitest";
import { EdgeSfmClient } from "./index.js";

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
