/**
 * Builds the web demo and the runner page into site/dist, which the Worker serves as static
 * assets on the API's own origin (wrangler.toml [assets]).
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  root: here("."),
  publicDir: false,
  build: {
    outDir: here("./dist"),
    emptyOutDir: true,
    target: "es2022",
    sourcemap: true,
    rollupOptions: { input: { index: here("./index.html"), runner: here("./runner.html") } },
    // The 3D view's chunk is three.js's WebGLRenderer (about 550 kB minified, not splittable);
    // it loads on its own after the page is usable (site/src/main.ts).
    chunkSizeWarningLimit: 700,
  },
  worker: { format: "es" },
  server: { fs: { allow: [here("..")] } },
});
