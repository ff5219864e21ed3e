/**
 * @module Reconstruction-level geometry (spec 2.13, 4.12, 4.13, 4.15): pose priors with their GPS,
 * timestamps and IMU samples, Sim3 transforms, localization and merge requests, and the answers of
 * the one-shot routes. Checked here once, for the worker (which validates requests) and the runner
 * (which uses them).
 */
import { z } from "zod";
import { Id, Sha256 } from "./common";
import { Rigid3, Rotation } from "./snapshot";

const Finite = z.number().refine(Number.isFinite, "must be a finite number");
const Vec3 = z.tuple([Finite, Finite, Finite]);

/** How far from 1 a quaternion's norm may be (a quaternion printed with 6 decimals is within 1e-5). */
export const UNIT_QUATERNION_TOLERANCE = 1e-3;

/** A rotation that is a unit Hamilton quaternion within UNIT_QUATERNION_TOLERANCE, every member finite. */
export const UnitRotation = Rotation.extend({ w: Finite, x: Finite, y: Finite, z: Finite }).refine(
  (q) => Math.abs(Math.hypot(q.w, q.x, q.y, q.z) - 1) <= UNIT_QUATERNION_TOLERANCE,
  { message: `must be a unit quaternion (|q| within ${UNIT_QUATERNION_TOLERANCE} of 1)` },
);

export const CheckedRigid3 = Rigid3.extend({ rotation: UnitRotation, translation: Vec3 });

/**
 * A position on the WGS84 ellipsoid, as EXIF GPS gives it (the spec leaves GpsCoord's fields open):
 * signed degrees (north and east positive: the hemisphere references are applied), the altitude in
 * metres above sea level (EXIF GPSAltitude with GPSAltitudeRef applied), and the horizontal accuracy
 * in metres when known (EXIF GPSHPositioningError); the mapper weighs the position by it.
 */
export const GpsCoord = z
  .object({
    latitude: Finite.pipe(z.number().min(-90).max(90)),
    longitude: Finite.pipe(z.number().min(-180).max(180)),
    altitude: Finite.nullable().default(null),
    horizontal_accuracy_m: Finite.pipe(z.number().positive()).nullable().default(null),
  })
  .meta({
    id: "GpsCoord",
    description: "WGS84 degrees (north/east positive), altitude in metres above sea level, horizontal accuracy in metres",
  });
export type GpsCoord = z.infer<typeof GpsCoord>;

/**
 * Nanoseconds as a JSON integer. Values beyond 2^53 keep every digit: the worker reads them from the
 * request's source text and writes them back as given (see `int64Json`), so they arrive here as digit strings.
 */
export const TimestampNs = z
  .union([z.number().int(), z.string().regex(/^-?\d{1,19}$/, "must be an integer")])
  .refine(
    (v) => typeof v !== "string" || !/^-?\d+$/.test(v) || (BigInt(v) >= -(2n ** 63n) && BigInt(v) < 2n ** 63n),
    "must fit in a signed 64-bit integer",
  )
  .meta({ type: "integer", format: "int64", description: "nanoseconds (any epoch; only their order is used); every digit is kept" });

export const ImuSample = z
  .object({
    timestamp_ns: TimestampNs,
    gyro: Vec3.describe("rad/s in the camera frame"),
    accel: Vec3.describe("m/s^2 in the camera frame"),
  })
  .meta({ id: "ImuSample" });

/** Row-major 6x6; rotation first (axis-angle, radians), then the camera centre (world units). */
export const COVARIANCE_ORDER =
  "rotation (axis-angle of world_from_cam, radians), then camera centre (world units), both in the world frame";

/** Relative tolerance of the covariance checks (symmetry, and negative eigenvalues as roundoff). */
const COVARIANCE_TOLERANCE = 1e-9;

export const PosePrior = z
  .object({
    cam_from_world: CheckedRigid3,
    covariance: z
      .array(Finite)
      .length(36)
      .superRefine((c, ctx) => {
        const problem = covarianceProblem(c);
        if (problem) ctx.addIssue({ code: "custom", message: problem });
      })
      .nullable()
      .optional()
      .describe(`36 numbers, a row-major 6x6 symmetric positive semi-definite matrix: ${COVARIANCE_ORDER}`),
    gps: GpsCoord.nullable().optional(),
    timestamp_ns: TimestampNs.nullable().optional(),
    imu: ImuSample.nullable().optional(),
  })
  .meta({
    id: "PosePrior",
    description:
      "A pose the caller already knows (2.13). With priors on at least 3 images, mapping aligns each model to them and keeps them in " +
      "global bundle adjustment as soft constraints weighted by `covariance` (without one: 0.1 rad and 1 world unit standard " +
      "deviations), so the model comes out in the priors' frame; without, 3 images with GPS (`gps`, else EXIF) put it in metres " +
      "East-North-Up of their mean position. Spatial and from_poses pairs read the priors' centres and axes; `timestamp_ns` orders " +
      "a sequence (sequential pairs); `imu` is kept as given.",
  });
export type PosePrior = z.infer<typeof PosePrior>;

/** At most this many priors per bulk write (8: the batch cap). */
export const MAX_BULK_PRIORS = 1000;

export const PosePriorsBulk = z
  .record(Id, PosePrior)
  .refine((m) => Object.keys(m).length <= MAX_BULK_PRIORS, `at most ${MAX_BULK_PRIORS} priors per call`)
  .meta({ id: "PosePriorsBulkRequest", description: "`{<image_id>: PosePrior}`, at most 1000 per call; all written or none" });

export const PosePriorsMap = z.object({ pose_priors: z.record(Id, PosePrior) }).meta({ id: "PosePriors" });
export const PosePriorsWritten = z.object({ written: z.number().int().min(0) }).meta({ id: "PosePriorsWritten" });

/**
 * Why 36 numbers are not a covariance: not symmetric, or an eigenvalue below zero beyond roundoff
 * (both relative to the largest entry). Null when they are one.
 */
export function covarianceProblem(c: readonly number[]): string | null {
  const scale = Math.max(1e-300, ...c.map(Math.abs));
  for (let i = 0; i < 6; i++) {
    for (let j = i + 1; j < 6; j++) {
      if (Math.abs(c[6 * i + j]! - c[6 * j + i]!) > COVARIANCE_TOLERANCE * scale)
        return `is not symmetric (entries ${i},${j} and ${j},${i} differ)`;
    }
  }
  const lowest = Math.min(...symmetricEigenvalues(c, 6));
  return lowest < -1e-9 * scale ? `is not positive semi-definite (an eigenvalue is ${lowest.toPrecision(3)})` : null;
}

/** Eigenvalues of a symmetric n x n matrix (row-major) by cyclic Jacobi rotations. */
export function symmetricEigenvalues(m: readonly number[], n: number): number[] {
  const a = Array.from(m);
  for (let sweep = 0; sweep < 64; sweep++) {
    let off = 0;
    for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) off += a[i * n + j]! ** 2;
    if (off < 1e-30 * Math.max(1e-300, ...a.map((v) => v * v))) break;
    for (let p = 0; p < n; p++) {
      for (let q = p + 1; q < n; q++) {
        const apq = a[p * n + q]!;
        if (apq === 0) continue;
        const theta = (a[q * n + q]! - a[p * n + p]!) / (2 * apq);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < n; k++) {
          const akp = a[k * n + p]!;
          const akq = a[k * n + q]!;
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (let k = 0; k < n; k++) {
          const apk = a[p * n + k]!;
          const aqk = a[q * n + k]!;
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
      }
    }
  }
  return Array.from({ length: n }, (_, i) => a[i * n + i]!);
}

// ---- Sim3 (2.13), georegister (4.13) ----

/** A Sim3 as requests carry it: a unit rotation, a finite translation and a positive finite scale (7: 422 otherwise). */
export const Sim3 = z
  .object({ rotation: UnitRotation, translation: Vec3, scale: Finite.pipe(z.number().positive("must be positive")) })
  .meta({ id: "Sim3", description: "`new_from_old * x = scale * R x + t`: rotation a unit Hamilton quaternion (scalar first), scale > 0" });
export type Sim3 = z.infer<typeof Sim3>;

/** Where `x-from_gps` takes the positions the cameras are aligned to. */
export const GEOREGISTER_REFERENCES = ["gps", "pose_priors"] as const;
export type GeoregisterReference = (typeof GEOREGISTER_REFERENCES)[number];

/**
 * Our extension of the georegister body (2.0 `x-` fields): no Sim3, `"x-from_gps": true`. The
 * Sim3 is then estimated robustly (Umeyama in RANSAC) from the registered cameras' centres and
 * their images' GPS positions (a pose prior's `gps`, else EXIF GPS; through a local ENU frame
 * whose origin the result names) or pose-prior centres, and its residuals reported in the task's result.
 */
export const GeoregisterFromGps = z
  .object({
    "x-from_gps": z.literal(true),
    "x-max_error_m": Finite.pipe(z.number().positive())
      .default(10)
      .describe("RANSAC inlier threshold on a camera centre's distance to its GPS/prior position, in metres (prior units for pose priors)"),
    "x-reference": z
      .enum(["auto", ...GEOREGISTER_REFERENCES])
      .default("auto")
      .describe(
        "gps: GPS positions (ENU metres); pose_priors: the priors' camera centres, in their frame; auto: gps when 3 images have one, else pose_priors",
      ),
  })
  .meta({ id: "GeoregisterFromGps" });
export type GeoregisterFromGps = z.infer<typeof GeoregisterFromGps>;

/** The georegister body: a Sim3 (4.13), or our `x-from_gps` extension. */
export const GeoregisterRequest = z.union([Sim3, GeoregisterFromGps]).meta({ id: "GeoregisterRequest" });
export type GeoregisterRequest = z.infer<typeof GeoregisterRequest>;

/**
 * Parses a georegister body by its form, so a refusal names the fields of the form meant: a body
 * with `x-from_gps` is the extension (and may not carry a Sim3 too), any other a Sim3.
 */
export function parseGeoregisterRequest(raw: unknown) {
  if (raw && typeof raw === "object" && !Array.isArray(raw) && "x-from_gps" in raw) {
    return GeoregisterFromGps.superRefine((_, ctx) => {
      for (const key of ["rotation", "translation", "scale"]) {
        if (key in raw) ctx.addIssue({ code: "custom", path: [key], message: "a Sim3 and x-from_gps exclude each other: give one" });
      }
    }).safeParse(raw);
  }
  return Sim3.safeParse(raw);
}

/** A `georegister` task: the snapshot `seq` (input artifacts `snapshot`, `submodel.<idx>`) transformed by `sim3`, or by one estimated `from_gps`. */
export type GeoregisterTaskParams = {
  georegister: {
    seq: number;
    submodels: number[];
    sim3: Sim3 | null;
    from_gps: { reference: GeoregisterReference; max_error_m: number } | null;
  };
};

/** How an estimated Sim3 fits its references (the `x-alignment` member of a georegister task's result). */
export interface GeoregisterAlignment {
  reference: GeoregisterReference;
  /** The ENU frame's origin (gps): the model comes out in metres east, north, up of it. */
  enu_origin: { latitude: number; longitude: number; altitude: number } | null;
  max_error_m: number;
  num_references: number;
  num_inliers: number;
  /** Over the inliers: root mean square, median and largest distance of an aligned centre to its reference. */
  rmse_m: number;
  median_m: number;
  max_m: number;
  residuals: { image_name: string; residual_m: number; inlier: boolean }[];
}

// ---- localization (2.13, 4.13, 4.15) ----

/** SIFT overrides of a localization request (2.13 `sift`): the FeaturesSpec knobs that apply to one query image. */
export const SiftOverrides = z
  .object({
    max_num_features: z.number().int().min(16).max(65536).optional(),
    first_octave: z.number().int().min(-1).max(4).optional(),
    peak_threshold: Finite.pipe(z.number().positive()).optional(),
    edge_threshold: Finite.pipe(z.number().positive()).optional(),
  })
  .meta({ id: "SiftOverrides" });

export const LocalizationRequest = z.object({ blob_sha: Sha256, sift: SiftOverrides.optional() }).meta({ id: "LocalizationRequest" });
export type LocalizationRequest = z.infer<typeof LocalizationRequest>;

export const LocalizationResult = z
  .object({
    success: z.boolean(),
    cam_from_world: Rigid3.describe("the query's pose in the snapshot's frame (identity when success is false)"),
    num_inliers: z.number().int().min(0),
    inlier_matches: z.array(z.tuple([z.number().int(), z.number().int()])).describe("[query keypoint index, point3d_id] per inlier"),
    diagnostics: z
      .looseObject({ query_path: z.string(), sparse_dir: z.string() })
      .describe("query_path: the query's blob; sparse_dir: the snapshot localized against; also counts, the camera used and why it failed"),
  })
  .meta({ id: "LocalizationResult" });
export type LocalizationResult = z.infer<typeof LocalizationResult>;

/** The query image a relocalize task reads: a blob of the tenant, with what its header says (2.5). */
export interface LocalizationQuery {
  blob_sha: string;
  byte_size: number;
  width: number | null;
  height: number | null;
  focal_length_35mm: number | null;
}

/**
 * The params of a `relocalize` task (2.9): the query, the SIFT overrides, and the snapshot it is
 * localized against (the job's input artifact `snapshot`, with the features its mapper read as `features`).
 */
export type RelocalizeTaskParams = {
  relocalize: { query: LocalizationQuery; sift: z.infer<typeof SiftOverrides>; recon_id: string; seq: number };
};

/** The params of a `oneshot_features` task (4.15): the image of the request, extracted with the default FeaturesSpec. */
export type OneshotFeaturesTaskParams = { oneshot_features: { query: LocalizationQuery } };

// ---- one-shot (4.15): the spec leaves the response shapes open ----

export const OneShotFeaturesResponse = z
  .object({
    width: z.number().int().positive().describe("of the image as decoded (EXIF orientation applied)"),
    height: z.number().int().positive(),
    num_keypoints: z.number().int().min(0),
    descriptor_kind: z.enum(["sift_l1_root", "sift_l2"]).describe("RootSIFT (COLMAP's default) or L2-normalised SIFT"),
    keypoints: z
      .array(z.tuple([z.number(), z.number(), z.number(), z.number()]))
      .describe("x, y (pixels, COLMAP convention: the top-left pixel's centre is 0.5, 0.5), scale, orientation (radians)"),
    descriptors: z.string().describe("base64 of num_keypoints x 128 bytes, one row per keypoint in `keypoints` order (COLMAP's bin order)"),
  })
  .meta({
    id: "OneShotFeaturesResponse",
    description:
      "SIFT features of the posted image (the extract stage's defaults, FeaturesSpec 2.12), computed by a runner within the request",
  });
export type OneShotFeaturesResponse = z.infer<typeof OneShotFeaturesResponse>;

export const OneShotLocalizeResponse = LocalizationResult.extend({
  recon_id: Id,
  snapshot_seq: z.number().int().min(1).describe("the snapshot localized against: the reconstruction's largest"),
}).meta({
  id: "OneShotLocalizeResponse",
  description: "A LocalizationResult (2.13) of the posted image against the reconstruction, computed by a runner within the request",
});
export type OneShotLocalizeResponse = z.infer<typeof OneShotLocalizeResponse>;

// ---- merge (4.9) ----

export const MergeRequest = z
  .object({
    target_recon_id: Id,
    source_recon_ids: z.array(Id).min(1).max(16),
    sim3_aligners: z.array(Sim3).nullable().optional().describe("parallel to source_recon_ids: target_from_source; estimated when absent"),
    "x-bundle_adjust": z
      .boolean()
      .default(true)
      .describe(
        "our extension: refine the joined model's poses, points and intrinsics (focal length, distortion) by bundle adjustment (Cauchy loss); default true",
      ),
  })
  .superRefine((m, ctx) => {
    if (m.sim3_aligners && m.sim3_aligners.length !== m.source_recon_ids.length) {
      ctx.addIssue({ code: "custom", path: ["sim3_aligners"], message: `must have one Sim3 per source (${m.source_recon_ids.length})` });
    }
    if (new Set([m.target_recon_id, ...m.source_recon_ids]).size !== m.source_recon_ids.length + 1) {
      ctx.addIssue({ code: "custom", path: ["source_recon_ids"], message: "the target and the sources must be distinct reconstructions" });
    }
  })
  .meta({ id: "MergeRequest" });
export type MergeRequest = z.infer<typeof MergeRequest>;

/** One model of a `merge` task: its reconstruction, the snapshot taken and its images' content SHA-256 by name (shared images are found by it). */
export type MergeTaskModel = { recon_id: string; seq: number; image_shas: Record<string, string> };

/**
 * A `merge` task: the target's snapshot (input artifact `snapshot`) and each source's (`source.<i>`),
 * with its `target_from_source` Sim3 when the request gave one.
 */
export type MergeTaskParams = {
  merge: { target: MergeTaskModel; sources: (MergeTaskModel & { sim3: Sim3 | null })[]; bundle_adjust: boolean };
};
