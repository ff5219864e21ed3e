// ESLint (flat config) with typescript-eslint: the recommended rules for every TypeScript and
// JavaScript file of the repo; `npm run lint`, counted as one check by `npm test`.
import js from "@eslint/js";
import { defineConfig, globalIgnores } from "eslint/config";
import globals from "globals";
import tseslint from "typescript-eslint";

export default defineConfig(
  globalIgnores([
    "**/node_modules/",
    "engine-wasm/build/",
    "site/dist/",
    ".wrangler/",
    ".state/",
    "test-output/",
    "bench/results/",
    "client/dist/",
    // Generated: wrangler types, openapi-typescript.
    "worker-configuration.d.ts",
    "client/schema.ts",
  ]),
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.browser, ...globals.node } },
    rules: {
      // A leading underscore marks what is unused on purpose (a skipped tuple slot, a dropped field).
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_", ignoreRestSiblings: true },
      ],
    },
  },
  {
    // Tests read JSON answers whose shape they are checking.
    files: ["**/*.test.ts", "test/**", "worker/test/**"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
);
