/** @module An engine worker as a nested dedicated Web Worker of the runner's worker (browser-host.ts starts it). */
import { serveEngine } from "./engine-worker";

serveEngine();
