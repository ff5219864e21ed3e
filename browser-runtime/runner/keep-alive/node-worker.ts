/** @module The keep-alive as a Node worker thread (node-host.ts starts it), through comlink's Node adapter. */
import { parentPort } from "node:worker_threads";
import nodeEndpoint from "comlink/dist/esm/node-adapter.mjs";
import { serveKeepAlive } from "./keep-alive";

if (!parentPort) throw new Error("keep-alive/node-worker.ts runs only as a worker thread");
serveKeepAlive(nodeEndpoint(parentPort));
