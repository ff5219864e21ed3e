/** @module An engine worker as a Node worker thread (node-host.ts starts it), through comlink's Node adapter. */
import { parentPort } from "node:worker_threads";
import nodeEndpoint from "comlink/dist/esm/node-adapter.mjs";
import { serveEngine } from "./engine-worker";

if (!parentPort) throw new Error("node-worker.ts runs only as a worker thread");
serveEngine(nodeEndpoint(parentPort));
