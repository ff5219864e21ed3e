/**
 * @module What this deployment can really do (spec 1.2). An optional capability is listed
 * here only once its stage truly runs end to end; the routes gate on `requireCapability`,
 * the one place a 501 `capability_unavailable` is decided.
 */
import { type OptionalCapability, capabilityFlags } from "../../protocol";
import { capabilityUnavailable } from "../errors";

export const IMPLEMENTED: ReadonlySet<OptionalCapability> = new Set<OptionalCapability>([]);

export const BACKEND = { name: "edgesfm-browser", version: "0.1.0", vendor: "EdgeSfM" } as const;

export const flags = () => capabilityFlags(IMPLEMENTED);

export function requireCapability(name: OptionalCapability | string): void {
  if (!IMPLEMENTED.has(name as OptionalCapability)) throw capabilityUnavailable(name);
}
