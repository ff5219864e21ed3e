// Prints the runtime-version map of this checkout's engine build and shaders as JSON: the
// service's SVC_RUNTIME_VERSIONS under `npm start`, equal to what the runners built from the
// same files report (browser-runtime/runtime-versions.ts).
import { localRuntimeVersions } from "../browser-runtime/runner/node-host";

console.log(JSON.stringify(await localRuntimeVersions()));
