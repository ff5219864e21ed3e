/** @module The keep-alive as a nested dedicated Web Worker of the runner's worker (browser-host.ts starts it). */
import { serveKeepAlive } from "./keep-alive";

serveKeepAlive();
