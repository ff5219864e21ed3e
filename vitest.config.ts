import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

/** Capabilities the worker tests treat as implemented; superpoint, global, two_stage stay off to test 501s. */
const TEST_CAPABILITIES =
  "features.extract.sift,pairs.exhaustive,matchers.nn-mutual,matches.verify,pipelines.incremental,map.incremental,ba.standard";

// Two projects: code that runs inside workerd (the API) and code that runs in Node
// (protocol codecs, the engine's wasm bindings, shaders through Dawn, conformance over HTTP).
export default defineConfig({
  test: {
    projects: [
      {
        plugins: [
          cloudflareTest({
            main: "./worker/index.ts",
            wrangler: { configPath: "./wrangler.toml" },
            // The job machinery is driven by a test runner before any real stage runs (see
            // worker/services/capabilities.ts); one-second keep-alives keep the SSE test short.
            // An operator runner token, as `npm start` sets one (its runners serve every tenant).
            // FUZZ_*: the length and seed of worker/fuzz.test.ts's run (`npm run fuzz`).
            miniflare: {
              bindings: {
                SVC_TEST_CAPABILITIES: TEST_CAPABILITIES,
                SVC_SSE_KEEPALIVE_SECONDS: "1",
                SVC_OPERATOR_RUNNER_TOKEN: "sfo_the-deployments-own-runners-0123",
                FUZZ_REQUESTS: process.env.FUZZ_REQUESTS ?? "",
                FUZZ_SEED: process.env.FUZZ_SEED ?? "",
              },
            },
          }),
        ],
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
            "client/**/*.test.ts",
            "test/**/*.test.ts",
          ],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
