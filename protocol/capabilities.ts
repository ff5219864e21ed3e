/**
 * @module Capability names (spec 1.2). The one list shared by the worker (which advertises
 * and gates them), the runner (which says what it can compute) and the site.
 */

import { EXPORT_FORMATS, exportCapability } from "./exports";

/** Always true on a conformant server (1.2), plus the two input flags the service itself provides. */
export const CORE_CAPABILITIES = [
  "projects.crud",
  "datasets.crud",
  "images.crud",
  "uploads.chunked",
  "jobs.read",
  "events.sse",
  "spec.read",
  "inputs.imu",
  "inputs.timestamps",
] as const;

/** Every OPTIONAL name of 1.2. Each is advertised false until the stage truly runs. */
export const OPTIONAL_CAPABILITIES = [
  ...(["sift", "superpoint", "aliked", "disk", "r2d2", "d2net"] as const).map((t) => `features.extract.${t}` as const),
  ...(["exhaustive", "sequential", "spatial", "vocabtree", "retrieval", "from_poses", "explicit"] as const).map(
    (s) => `pairs.${s}` as const,
  ),
  ...(["nn-mutual", "nn-ratio", "superglue", "lightglue", "loftr", "mast3r"] as const).map((m) => `matchers.${m}` as const),
  "matches.verify",
  ...(["incremental", "global", "hierarchical", "spherical"] as const).flatMap((k) => [`map.${k}`, `pipelines.${k}`] as const),
  ...(["standard", "two_stage", "featuremetric"] as const).map((m) => `ba.${m}` as const),
  "triangulate.retri",
  "relocalize.images",
  "pgo.optimize",
  ...EXPORT_FORMATS.map(exportCapability),
  "dense.patch_match_stereo",
  "dense.stereo_fusion",
  "mesh.poisson",
  "mesh.delaunay",
  "similarity.dhash",
  "similarity.vlad",
  "localize.from_memory",
  "localize.batch",
  "localize.sequence",
  "georegister.sim3",
  "recon.merge",
  "projection.equirectangular_to_cubemap",
  "projection.cubemap_to_equirectangular",
  "projection.equirectangular_to_perspective",
  "projection.cubemap_rig",
  "pose_priors.read_write",
  "import.kapture",
  "video.frame_extract",
  "segment.sam",
  // Backend-added key (1.2 rule 2): one-shot features (4.15) is named by no spec capability, and
  // `features.extract.sift` being true for jobs says nothing about answering within one request.
  "oneshot.features",
  // Backend-added key: PairsSpec `retrieval_strategy: netvlad` (2.12) needs learned weights, which
  // no spec capability names; advertised false while they cannot be loaded.
  "similarity.netvlad",
] as const;

/**
 * Legacy names still accepted (9.6), each advertised exactly when the capability it became is:
 * `:render_cubemap` was `spherical.render_cubemap`, `:to_cubemap` was `spherical.to_cubemap`.
 */
export const LEGACY_CAPABILITIES = {
  "spherical.render_cubemap": "projection.equirectangular_to_cubemap",
  "spherical.to_cubemap": "projection.cubemap_rig",
} as const satisfies Record<string, (typeof OPTIONAL_CAPABILITIES)[number]>;

export type CoreCapability = (typeof CORE_CAPABILITIES)[number];
export type OptionalCapability = (typeof OPTIONAL_CAPABILITIES)[number];
export type LegacyCapability = keyof typeof LEGACY_CAPABILITIES;
export type Capability = CoreCapability | OptionalCapability | LegacyCapability;

/** The flag map of `GET /v1/capabilities`: core true, optional true only when `implemented` says so. */
export function capabilityFlags(implemented: ReadonlySet<OptionalCapability>): Record<Capability, boolean> {
  const flags = {} as Record<Capability, boolean>;
  for (const c of CORE_CAPABILITIES) flags[c] = true;
  for (const c of OPTIONAL_CAPABILITIES) flags[c] = implemented.has(c);
  for (const [legacy, current] of Object.entries(LEGACY_CAPABILITIES)) flags[legacy as LegacyCapability] = implemented.has(current);
  return flags;
}
