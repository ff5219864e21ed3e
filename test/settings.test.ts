/**
 * Settings and parameters that tell the truth (issue 22): every deployment setting the Worker
 * reads is documented in docs/operations.md with the default it really has, every documented or
 * configured one is read, and a parameter the service accepts without acting on it says so.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { PipelineSpec } from "../protocol";

const root = new URL("..", import.meta.url).pathname;
const read = (path: string) => readFileSync(join(root, path), "utf8");
const SETTING = /SVC_[A-Z0-9_]+/g;

function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === "test" ? [] : sources(path);
    return /\.ts$/.test(e.name) && !/\.test\.ts$/.test(e.name) ? [path] : [];
  });
}

/** The settings table of docs/operations.md: variable -> documented default. */
function documented(): Map<string, string> {
  const rows = [...read("docs/operations.md").matchAll(/^\| `(SVC_[A-Z0-9_]+)` \| ([^|]+) \|/gm)];
  return new Map(rows.map((m) => [m[1]!, m[2]!.trim()]));
}

describe("deployment settings", () => {
  // Set only by the test configuration (vitest.config.ts), never by a deployment.
  const TEST_ONLY = new Set(["SVC_TEST_CAPABILITIES"]);

  it("every setting the Worker reads is documented, and every documented or configured one is read", () => {
    const read_ = new Set(sources("worker").flatMap((f) => read(relative(root, join(root, f))).match(SETTING) ?? []));
    const docs = documented();
    const undocumented = [...read_].filter((s) => !docs.has(s) && !TEST_ONLY.has(s));
    expect(undocumented, "read by the Worker, missing from docs/operations.md").toEqual([]);
    const mentioned = new Set(
      [...read("docs/operations.md").matchAll(SETTING), ...read("wrangler.toml").matchAll(SETTING)].map((m) => m[0]),
    );
    expect(
      [...mentioned].filter((s) => !read_.has(s)),
      "documented or configured, read by nothing",
    ).toEqual([]);
  });

  it("the documented defaults are the ones the Worker applies, and wrangler.toml sets what the docs say", () => {
    const docs = documented();
    // worker/config.ts's defaults, `int(vars.SVC_X, <arithmetic>)` (times 1000 where it keeps milliseconds).
    const applied: Record<string, number> = {};
    for (const m of read("worker/config.ts").matchAll(/int\(vars\.(SVC_[A-Z0-9_]+), ([\d *]+)\)/g)) {
      applied[m[1]!] = m[2]!.split(" * ").reduce((product, factor) => {
        const [base, exponent] = factor.split("**").map(Number);
        return product * (exponent === undefined ? base! : base! ** exponent);
      }, 1);
    }
    const bytes = (text: string) => {
      const m = /^([\d.]+) (KiB|MiB|GiB)$/.exec(text);
      return m ? Number(m[1]) * 1024 ** { KiB: 1, MiB: 2, GiB: 3 }[m[2] as "KiB" | "MiB" | "GiB"] : Number(text);
    };
    expect(Object.keys(applied).length).toBeGreaterThanOrEqual(10);
    for (const [name, value] of Object.entries(applied)) expect(bytes(docs.get(name)!), name).toBe(value);
    // What wrangler.toml sets is the documented default (the docs describe the deployment as configured).
    for (const m of read("wrangler.toml").matchAll(/^(SVC_[A-Z0-9_]+) = "([^"]*)"$/gm)) {
      if (m[1]! in applied) expect(Number(m[2]), m[1]).toBe(applied[m[1]!]);
    }
  });
});

describe("accepted parameters", () => {
  it("ba_global_use_pba is described as a hint that changes no result", () => {
    const incremental = PipelineSpec.options.find((o) => o.shape.kind.value === "incremental")!;
    const description = ("ba_global_use_pba" in incremental.shape ? incremental.shape.ba_global_use_pba.description : "") ?? "";
    expect(description).toMatch(/^a hint/);
    expect(description).toContain("changes no result");
  });
});
