import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

// Two projects: code that runs inside workerd (the API) and code that runs in Node
// (protocol codecs, the engine's wasm bindings, shaders through Dawn, conformance over HTTP).
export default defineConfig({
  test: {
    projects: [
      {
        plugins: [cloudflareTest({ main: "./worker/index.ts", wrangler: { configPath: "./wrangler.toml" } })],
        test: { name: "worker", include: ["worker/**/*.test.ts"] },
      },
      {
        test: {
          name: "node",
          environment: "node",
          include: [
            "protocol/**/*.test.ts",
            "engine-wasm/**/*.test.ts",
            "shaders/**/*.test.ts",
            "browser-runtime/**/*.test.ts",
            "test/**/*.test.ts",
          ],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
