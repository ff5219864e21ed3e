/**
 * @module What this deployment can really do (spec 1.2). An optional capability is listed
 * here only once its stage truly runs end to end; the routes gate on `requireCapability`,
 * the one place a 501 `capability_unavailable` is decided.
 */
import { EXPORT_FORMATS, OPTIONAL_CAPABILITIES, type OptionalCapability, capabilityFlags, exportCapability } from "../../protocol";
import { capabilityUnavailable } from "../errors";

/**
 * Computed by the runners of this build (browser-runtime/runner/executors), which `npm start`
 * runs in headless Chromium and any tab can run: SIFT extraction, exhaustive and sequential pairs,
 * brute-force matching, two-view verification, and the incremental mapper with standard and
 * two-stage bundle adjustment (tested end to end in test/e2e/browser-runner.test.ts); and every
 * export format, from a sealed snapshot or component (test/e2e/pipeline.test.ts exports a real
 * reconstruction in each, read back by COLMAP's own tools where they exist). Pose priors are
 * stored and served by the service itself (routes/pose-priors.ts).
 */
export const IMPLEMENTED: ReadonlySet<OptionalCapability> = new Set<OptionalCapability>([
  "features.extract.sift",
  "pairs.exhaustive",
  "pairs.sequential",
  "matchers.nn-mutual",
  "matchers.nn-ratio",
  "matches.verify",
  "map.incremental",
  "pipelines.incremental",
  "ba.standard",
  "ba.two_stage",
  ...EXPORT_FORMATS.map(exportCapability),
  "pose_priors.read_write",
  // Projection jobs (4.14): the runners' `projection` executor, WGSL or its wasm twin (test/e2e/projection.test.ts).
  "projection.equirectangular_to_cubemap",
  "projection.cubemap_to_equirectangular",
  "projection.equirectangular_to_perspective",
  // Spherical datasets as cubemap rigs: the spherical pipeline (features on the cube faces, the rig
  // adjusted as one) and `:to_cubemap` (test/e2e/spherical-pipeline.test.ts).
  "map.spherical",
  "pipelines.spherical",
  // Global mapping (2.12 `global`): rotation averaging over the filtered view graph, global positioning,
  // global bundle adjustment with retriangulation, on the runners' map executor (engine-wasm/src/sfm/global_mapper.h;
  // test/e2e/global-pipeline.test.ts scores it against the COLMAP reference).
  "map.global",
  "pipelines.global",
  // Hierarchical mapping (2.12 `hierarchical`): the view graph cut into clusters, each mapped as a shard of its own by any
  // runner, joined by Sim3 with a bundle adjustment, then the photos no cluster model brought in registered into the joined
  // model (storage/job/hierarchical.ts, runner executors/hierarchical.ts; test/e2e/hierarchical-pipeline.test.ts maps
  // opensfm-lund in 4 clusters, 29/29 photos within issue 5's bars against the COLMAP reference).
  "map.hierarchical",
  "pipelines.hierarchical",
  "projection.cubemap_rig",
  // dHash similarity (4.11): the index built by the Worker on :build or the first query, or by a
  // runner's vlad task (routes/similarity.ts); retrieval pairs from it (2.12, test/e2e/retrieval.test.ts).
  "similarity.dhash",
  // VLAD similarity (4.11 rule 2): the runners' vlad task over the job's SIFT features, with the
  // codebook trained by scripts/train-vocab.ts (browser-runtime/stages/vlad.ts; test/e2e/retrieval.test.ts).
  "similarity.vlad",
  // Vocabulary-tree pairs: the runners' vlad task computes bags of words in the tree trained by
  // scripts/train-vocab.ts (browser-runtime/stages/vocab-tree.ts; worker/routes/retrieval.test.ts; a pipeline on a real runner: test/e2e/retrieval.test.ts).
  "pairs.vocabtree",
  "pairs.retrieval",
  // Pairs by position (2.12): GPS in a local ENU frame or pose-prior centres, and prior viewing
  // directions for from_poses (browser-runtime/stages/pairs.ts; worker/routes/pairs-by-position.test.ts).
  "pairs.spatial",
  "pairs.from_poses",
  // Explicit pairs (2.12, 4.6 rule 5): `image_pairs` or an uploaded `image1 image2` list, checked at
  // submission (services/explicit-pairs.ts; worker/routes/explicit-pairs.test.ts, test/e2e/explicit-pairs.test.ts).
  "pairs.explicit",
  // Localization against a reconstruction's largest snapshot (4.13): the runners' `relocalize` executor (test/e2e/localize.test.ts).
  "localize.from_memory",
  // A Sim3 applied to a sealed snapshot, or estimated from GPS or pose priors: the runners' `georegister` executor (worker/routes/georegister.test.ts).
  "georegister.sim3",
  // One-shot features and localization (4.15), computed by a runner within the request (services/oneshot.ts; test/e2e/localize.test.ts).
  "oneshot.features",
  // Reconstructions merged, aligned by given or estimated Sim3s: the runners' `merge` executor (worker/routes/merge.test.ts).
  "recon.merge",
  // Kapture archives imported as datasets with their cameras and pose priors, by the Worker (services/kapture-import.ts; worker/routes/dataset-imports.test.ts).
  "import.kapture",
  // Frames of a video as a dataset: the browser runners' `frame_extract` executor, WebCodecs and mp4box
  // (test/e2e/video-frames.test.ts in headless Chromium); runners without WebCodecs never register for it.
  "video.frame_extract",
]);

export const BACKEND = { name: "edgesfm-browser", version: "0.1.0", vendor: "EdgeSfM" } as const;

/**
 * IMPLEMENTED, plus the names in `SVC_TEST_CAPABILITIES` (comma-separated). That variable is
 * for tests only, which drive the job machinery with a test runner before the real stages run
 * anywhere; a deployment never sets it, since a flag must mean the stage truly runs (1.2).
 */
export function implemented(env: Env): ReadonlySet<OptionalCapability> {
  const extra = (env as unknown as Record<string, string | undefined>).SVC_TEST_CAPABILITIES;
  if (!extra) return IMPLEMENTED;
  const known = new Set<string>(OPTIONAL_CAPABILITIES);
  return new Set([
    ...IMPLEMENTED,
    ...extra
      .split(",")
      .map((s) => s.trim())
      .filter((s): s is OptionalCapability => known.has(s)),
  ]);
}

export const flags = (env: Env) => capabilityFlags(implemented(env));

export function requireCapability(env: Env, name: OptionalCapability | string): void {
  if (!implemented(env).has(name as OptionalCapability)) throw capabilityUnavailable(name);
}
