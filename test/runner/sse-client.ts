/**
 * @module A small SSE reader on plain `fetch` (workerd tests, Node, benchmarks): frames as they
 * arrive, events (`id:` + `data:`) and comments (`: ...`), until the server closes the stream.
 */
export type SseFrame = { id: number; data: any } | { comment: string };

export async function openSse(fetchFn: (url: string, init?: RequestInit) => Promise<Response>, url: string, headers: Record<string, string> = {}) {
  const res = await fetchFn(url, { headers });
  if (res.status !== 200) throw new Error(`SSE ${url}: ${res.status} ${await res.text()}`);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  return {
    res,
    /** The next frame, or null once the stream closed. */
    async next(): Promise<SseFrame | null> {
      for (;;) {
        const end = buffer.indexOf("\n\n");
        if (end >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = /^data: (.*)$/m.exec(frame);
          if (data) return { id: Number(/^id: (\d+)$/m.exec(frame)![1]), data: JSON.parse(data[1]!) };
          const comment = /^: ?(.*)$/m.exec(frame);
          if (comment) return { comment: comment[1]! };
          continue;
        }
        const { done, value } = await reader.read();
        if (done) return null;
        buffer += value;
      }
    },
    /** The next event, skipping comments; null once the stream closed. */
    async event(): Promise<{ id: number; data: any } | null> {
      for (;;) {
        const f = await this.next();
        if (f === null || "id" in f) return f;
      }
    },
    cancel: () => reader.cancel(),
  };
}
