/**
 * @module The Worker entry: the API (Hono) and its Durable Object classes.
 */
import { createApp } from "./app";

export { Dispatcher } from "./storage/dispatcher";
export { JobStore } from "./storage/job-store";
export { KeyRegistry } from "./storage/key-registry";
export { TenantStore } from "./storage/tenant-store";

const app = createApp();

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
