/**
 * Builds the web demo and the runner page into site/dist, which the Worker serves as static
 * assets on the API's own origin (wrangler.toml [assets]).
 */
import { fileURLToPath } from "node:url";
import { createLogger, defineConfig } from "vite";

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

/** Node-only modules that shared code imports only when running in Node (see node-only.ts). */
const NODE_ONLY = ["webgpu", "node:fs", "node:fs/promises", "node:os", "node:path"];

/**
 * Known noise, dropped so that any other warning stands out: bundler timing reports (they
 * measure this shared machine's load, not the site) and the engine's Emscripten glue computing
 * its Node-only __dirname from `new URL(".", import.meta.url)`.
 */
const NOISE = [/PLUGIN_TIMINGS/, /new URL\("\.", import\.meta\.url\) doesn't exist at build time/];
const logger = createLogger("warn");
const [warn, warnOnce] = [logger.warn.bind(logger), logger.warnOnce.bind(logger)];
logger.warn = (msg, options) => void (NOISE.some((n) => n.test(msg)) || warn(msg, options));
logger.warnOnce = (msg, options) => void (NOISE.some((n) => n.test(msg)) || warnOnce(msg, options));

export default defineConfig({
  customLogger: logger,
  root: here("."),
  publicDir: false,
  resolve: { alias: NODE_ONLY.map((find) => ({ find: new RegExp(`^${find}$`), replacement: here("./src/compute/node-only.ts") })) },
  build: {
    outDir: here("./dist"),
    emptyOutDir: true,
    target: "es2022",
    sourcemap: true,
    rollupOptions: { input: { index: here("./index.html"), runner: here("./runner.html") } },
    // The threaded engine's pthread worker script is small enough to be inlined as a data: URL,
    // whose opaque origin could not share the engine's memory: it stays a file of the origin.
    assetsInlineLimit: (file) => (file.endsWith(".worker.js") ? false : undefined),
    // The 3D view's chunk is three.js's WebGLRenderer (about 550 kB minified, not splittable);
    // it loads on its own after the page is usable (site/src/main.ts).
    chunkSizeWarningLimit: 700,
  },
  worker: { format: "es" },
  server: { fs: { allow: [here("..")] } },
});
