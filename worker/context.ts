/** @module The typed Hono environment shared by middleware and routes. */
import type { Config } from "./config";

export interface AppEnv {
  Bindings: Env;
  Variables: {
    config: Config;
    /** Resolved from the API key (or the default tenant in `none` mode); never from the caller (5.3). */
    tenantId: string;
    /** The request came with a valid signed link (services/signed-urls.ts), not a key. */
    signedLink?: boolean;
    requestId: string;
  };
}

export const DEFAULT_TENANT = "default";
export const SERVICE_NAME = "edgesfm";
export const SERVICE_VERSION = "0.1.0";
export const SPEC_VERSION = "v1.0-draft";
