/**
 * @module `/metrics` (reference-only, 4.1): Prometheus text of this isolate's request counters.
 * Workers run many isolates; each reports its own counts since it started (label `isolate`).
 */
import { SERVICE_VERSION } from "../context";

// Random values are not allowed at global scope in Workers: the isolate id is made on first use.
let isolate: string | null = null;
let started = 0;
const requests = new Map<string, number>();

function isolateId(): string {
  if (!isolate) {
    isolate = crypto.randomUUID().slice(0, 8);
    started = Date.now();
  }
  return isolate;
}

export function recordRequest(method: string, status: number): void {
  isolateId();
  const key = `method="${method}",code="${status}"`;
  requests.set(key, (requests.get(key) ?? 0) + 1);
}

export function metricsText(): string {
  const id = isolateId();
  const lines = [
    "# HELP edgesfm_build_info Service build information.",
    "# TYPE edgesfm_build_info gauge",
    `edgesfm_build_info{version="${SERVICE_VERSION}"} 1`,
    "# HELP edgesfm_isolate_start_time_seconds When this isolate started.",
    "# TYPE edgesfm_isolate_start_time_seconds gauge",
    `edgesfm_isolate_start_time_seconds{isolate="${id}"} ${Math.floor(started / 1000)}`,
    "# HELP edgesfm_http_requests_total HTTP requests served by this isolate.",
    "# TYPE edgesfm_http_requests_total counter",
    ...[...requests].map(([k, n]) => `edgesfm_http_requests_total{isolate="${id}",${k}} ${n}`),
  ];
  return `${lines.join("\n")}\n`;
}
