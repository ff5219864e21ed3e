// The package as npm would ship it: `npm run build` compiles client/ to dist/, which a plain Node
// process imports (ESM, with the .js specifiers Node needs) and constructs a client from.
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { afterAll, expect, it } from "vitest";

const root = new URL("..", import.meta.url).pathname;
afterAll(() => rmSync(new URL("dist/", import.meta.url), { recursive: true, force: true }));

it("builds to dist/ and loads in Node", () => {
  const build = spawnSync("npx", ["tsc", "-p", "client/tsconfig.build.json"], { cwd: root, encoding: "utf8" });
  expect(build.stdout + build.stderr).not.toMatch(/error TS/);
  expect(build.status).toBe(0);
  const script = `const m = await import("./client/dist/index.js"); const c = new m.EdgeSfmClient({ baseUrl: "http://x" }); console.log(typeof c.api.GET, typeof c.runner.lease, typeof m.ProblemError);`;
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], { cwd: root, encoding: "utf8" });
  expect(run.stderr).toBe("");
  expect(run.stdout.trim()).toBe("function function function");
});
