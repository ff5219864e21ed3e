/**
 * @module Panorama projections (spec 4.14, 4.13 `:to_cubemap`, 1.2 `projection.*`): the cubemap
 * convention (rule 7), the request bodies of the four dataset routes, the task params the runner
 * reads and `projection_manifest.json`. One definition for worker, runner and site.
 *
 * Geometry: a panorama is an equirectangular SPHERICAL camera (2.4; column W/2 looks along +z,
 * image y and camera y point down). Its cubemap is a rig of six pinhole faces with OpenCV image
 * axes sharing its centre, in the order front, right, back, left, up, down; front is the
 * reference sensor, the rig frame is the panorama's camera frame. engine-wasm/src/scene/cubemap.h
 * is the engine's copy of the same table (engine-wasm/ts/projection.test.ts checks they agree).
 */
import { z } from "zod";
import { Id } from "./schemas/common";
import type { Rigid3 } from "./schemas/snapshot";

/** Resampling kernels, in the kernels' numbering (shaders/projection.wgsl, engine-wasm image/projection.h). */
export const SAMPLINGS = ["nearest", "linear", "cubic", "lanczos"] as const;
export const Sampling = z.enum(SAMPLINGS);
export type Sampling = z.infer<typeof Sampling>;

export const CUBEMAP_FACES = ["front", "right", "back", "left", "up", "down"] as const;
export type CubemapFace = (typeof CUBEMAP_FACES)[number];

/** rig_from_face of each face, row-major 3 x 3: the columns are the face camera's x, y, z axes in the rig (panorama) frame. */
export const CUBEMAP_RIG_FROM_FACE: Record<CubemapFace, readonly number[]> = {
  front: [1, 0, 0, 0, 1, 0, 0, 0, 1],
  right: [0, 0, 1, 0, 1, 0, -1, 0, 0],
  back: [-1, 0, 0, 0, 1, 0, 0, 0, -1],
  left: [0, 0, -1, 0, 1, 0, 1, 0, 0],
  up: [1, 0, 0, 0, 0, -1, 0, 1, 0],
  down: [1, 0, 0, 0, 0, 1, 0, -1, 0],
};

/** The viewing direction of a SPHERICAL pixel (2.4; COLMAP's pixel-centre convention). */
export function panoramaRay(x: number, y: number, width: number, height: number): [number, number, number] {
  const longitude = (x / width - 0.5) * 2 * Math.PI;
  const latitude = (y / height - 0.5) * Math.PI;
  return [Math.cos(latitude) * Math.sin(longitude), Math.sin(latitude), Math.cos(latitude) * Math.cos(longitude)];
}

/** The face whose view holds a direction: its largest axis, ties to the earlier face (the engine's CubemapFaceOfRay). */
export function cubemapFaceOfRay([x, y, z]: readonly [number, number, number]): CubemapFace {
  const [ax, ay, az] = [Math.abs(x), Math.abs(y), Math.abs(z)];
  if (az >= ax && az >= ay) return z >= 0 ? "front" : "back";
  if (ax >= ay) return x >= 0 ? "right" : "left";
  return y < 0 ? "up" : "down";
}

/** Cubemap `face_size` bounds (spec 8). */
export const FACE_SIZE_MIN = 64;
export const FACE_SIZE_MAX = 8192;
/** One projection job's outputs travel in one artifact (protocol/artifacts.ts MAX_ARTIFACT_FILES, less the manifest). */
export const MAX_PROJECTED_IMAGES = 1023;

/** Hamilton quaternion (w, x, y, z) of a row-major rotation matrix (Shepperd's method). */
export function quaternionOfMatrix(m: readonly number[]): Rigid3["rotation"] {
  const [m00, m01, m02, m10, m11, m12, m20, m21, m22] = m as [number, number, number, number, number, number, number, number, number];
  const trace = m00 + m11 + m22;
  let q: [number, number, number, number];
  if (trace > 0) {
    const s = 2 * Math.sqrt(1 + trace);
    q = [s / 4, (m21 - m12) / s, (m02 - m20) / s, (m10 - m01) / s];
  } else if (m00 > m11 && m00 > m22) {
    const s = 2 * Math.sqrt(1 + m00 - m11 - m22);
    q = [(m21 - m12) / s, s / 4, (m01 + m10) / s, (m02 + m20) / s];
  } else if (m11 > m22) {
    const s = 2 * Math.sqrt(1 + m11 - m00 - m22);
    q = [(m02 - m20) / s, (m01 + m10) / s, s / 4, (m12 + m21) / s];
  } else {
    const s = 2 * Math.sqrt(1 + m22 - m00 - m11);
    q = [(m10 - m01) / s, (m02 + m20) / s, (m12 + m21) / s, s / 4];
  }
  // A canonical sign: w >= 0.
  const sign = q[0] < 0 ? -1 : 1;
  return { w: sign * q[0] + 0, x: sign * q[1] + 0, y: sign * q[2] + 0, z: sign * q[3] + 0 };
}

/** The face size of a cubemap when none is asked: a quarter of the widest panorama, within 64..8192. */
export function defaultFaceSize(widths: ReadonlyArray<number | null>): number {
  const widest = Math.max(0, ...widths.map((w) => w ?? 0));
  return Math.min(FACE_SIZE_MAX, Math.max(FACE_SIZE_MIN, Math.round((widest || 4096) / 4)));
}

/** A face's sensor_from_rig (= face_from_rig: the transpose, no translation), as rigs.json holds it (2.14). */
export function cubemapSensorFromRig(face: CubemapFace): Rigid3 {
  const r = CUBEMAP_RIG_FROM_FACE[face];
  const t = [r[0], r[3], r[6], r[1], r[4], r[7], r[2], r[5], r[8]] as number[];
  return { rotation: quaternionOfMatrix(t), translation: [0, 0, 0] };
}

/** A face camera: PINHOLE with focal length face_size / 2 and the principal point at the centre (90 degrees, tiling the sphere). */
export const cubemapFaceParams = (faceSize: number) => [faceSize / 2, faceSize / 2, faceSize / 2, faceSize / 2];

/**
 * pano_from_cam of a view turned `yaw` to the right (about the panorama's down axis), then
 * `pitch` up, then `roll` about its optical axis (degrees), row-major: R_y(yaw) R_x(pitch) R_z(roll).
 * Yaw 90 is the right face, pitch 90 the up face.
 */
export function viewRotation(yawDeg: number, pitchDeg: number, rollDeg: number): number[] {
  const rad = Math.PI / 180;
  const [cy, sy, cp, sp, cr, sr] = [
    Math.cos(yawDeg * rad),
    Math.sin(yawDeg * rad),
    Math.cos(pitchDeg * rad),
    Math.sin(pitchDeg * rad),
    Math.cos(rollDeg * rad),
    Math.sin(rollDeg * rad),
  ];
  const ry = [cy, 0, sy, 0, 1, 0, -sy, 0, cy];
  const rx = [1, 0, 0, 0, cp, -sp, 0, sp, cp];
  const rz = [cr, -sr, 0, sr, cr, 0, 0, 0, 1];
  return multiply(multiply(ry, rx), rz);
}

function multiply(a: readonly number[], b: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < 3; i++)
    for (let j = 0; j < 3; j++) out.push(a[3 * i]! * b[j]! + a[3 * i + 1]! * b[3 + j]! + a[3 * i + 2]! * b[6 + j]!);
  return out;
}

// ---- requests (4.14; the spec shows only `output.create_dataset` and `face_size`) ----

export const FaceSize = z.number().int().min(FACE_SIZE_MIN).max(FACE_SIZE_MAX);

export const ProjectionOutput = z
  .object({
    create_dataset: z.boolean().default(true).describe("register the projected images as a derived dataset (4.14 rule 4)"),
    dataset_name: z
      .string()
      .min(1)
      .max(200)
      .nullable()
      .default(null)
      .describe(
        "the derived dataset's name (default: the source dataset's name and the projection); a name the project already has gets the task id appended",
      ),
    format: z.enum(["jpeg", "png"]).default("jpeg").describe("encoding of the projected images"),
    jpeg_quality: z.number().int().min(1).max(100).default(95),
  })
  .meta({ id: "ProjectionOutput" });
export type ProjectionOutput = z.infer<typeof ProjectionOutput>;
const output = ProjectionOutput.default(ProjectionOutput.parse({}));

const uniqueFaces = z
  .array(z.enum(CUBEMAP_FACES))
  .min(1)
  .max(6)
  .refine((f) => new Set(f).size === f.length, "faces must not repeat")
  .default([...CUBEMAP_FACES])
  .describe("which faces to render, in the cubemap order whatever the order given");

const cubemapFields = {
  face_size: FaceSize.nullable()
    .default(null)
    .describe("pixels per face side, 64 to 8192 (8); default a quarter of each panorama's width, within those bounds"),
  sampling: Sampling.default("linear"),
  faces: uniqueFaces,
  output,
};
export const CubemapProjectionRequest = z.object(cubemapFields).meta({ id: "CubemapProjectionRequest" });

const equirectangularFields = {
  width: z
    .number()
    .int()
    .min(64)
    .max(16384)
    .refine((w) => w % 2 === 0, "must be even (the height is half of it)")
    .nullable()
    .default(null)
    .describe("panorama width (the height is half); default four times the face size"),
  sampling: Sampling.default("linear"),
  output,
};
export const EquirectangularProjectionRequest = z.object(equirectangularFields).meta({ id: "EquirectangularProjectionRequest" });

export const PerspectiveViewSpec = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "letters, digits, '_' and '-' (it names the view's folder)"),
    yaw_deg: z.number().min(-360).max(360).default(0).describe("turned right about the panorama's vertical axis"),
    pitch_deg: z.number().min(-90).max(90).default(0).describe("then up"),
    roll_deg: z.number().min(-180).max(180).default(0).describe("then about the optical axis"),
  })
  .meta({ id: "PerspectiveView" });

const DEFAULT_VIEWS = [
  { name: "yaw000", yaw_deg: 0, pitch_deg: 0, roll_deg: 0 },
  { name: "yaw090", yaw_deg: 90, pitch_deg: 0, roll_deg: 0 },
  { name: "yaw180", yaw_deg: 180, pitch_deg: 0, roll_deg: 0 },
  { name: "yaw270", yaw_deg: 270, pitch_deg: 0, roll_deg: 0 },
];

const perspectiveFields = {
  width: z.number().int().min(16).max(FACE_SIZE_MAX).default(1024),
  height: z.number().int().min(16).max(FACE_SIZE_MAX).default(768),
  fov_deg: z.number().gt(0).lt(180).default(90).describe("horizontal field of view; square pixels"),
  views: z
    .array(PerspectiveViewSpec)
    .min(1)
    .max(64)
    .refine((v) => new Set(v.map((x) => x.name)).size === v.length, "view names must not repeat")
    .default(DEFAULT_VIEWS)
    .describe("default: four views around the horizon"),
  sampling: Sampling.default("linear"),
  output,
};
export const PerspectiveProjectionRequest = z.object(perspectiveFields).meta({ id: "PerspectiveProjectionRequest" });

export const PROJECTIONS = ["equirectangular_to_cubemap", "cubemap_to_equirectangular", "equirectangular_to_perspective"] as const;
export type Projection = (typeof PROJECTIONS)[number];

/** `:project_images`: any of the three, named by `projection`. */
export const ProjectionJobRequest = z
  .discriminatedUnion("projection", [
    z.object({ projection: z.literal("equirectangular_to_cubemap"), ...cubemapFields }),
    z.object({ projection: z.literal("cubemap_to_equirectangular"), ...equirectangularFields }),
    z.object({ projection: z.literal("equirectangular_to_perspective"), ...perspectiveFields }),
  ])
  .meta({ id: "ProjectionJobRequest" });
export type ProjectionJobRequest = z.infer<typeof ProjectionJobRequest>;

/** The capability of each projection (1.2, 4.14 rules 5, 6). */
export const projectionCapability = (p: Projection) => `projection.${p}` as const;

// ---- the task (kind `projection`) and its outputs ----

/**
 * A task that registers a dataset (4.14 rule 4, and the imports of 4.2) carries its name here; the
 * service names the dataset from it, never from the runner.
 */
export type DerivedDatasetParams = { derived_dataset: { name: string } | null };

/** The normalised request the runner executes, with the source checked at submission. */
export type ProjectionTaskParams = { projection: ProjectionJobRequest & { source_dataset_id: string } } & DerivedDatasetParams;

/** Projected images are named `<face or view>/<panorama stem>.<ext>` (COLMAP's rig image prefixes); panoramas `<stem>.<ext>`. */
export const stemOf = (name: string) => name.replace(/\.[^./]*$/, "");
export const extensionOf = (format: ProjectionOutput["format"]) => (format === "png" ? "png" : "jpg");

/**
 * The cubemap groups of a dataset: images named `<face>/<rest>` (what `:render_cubemap` writes),
 * grouped by `<rest>`; a group missing a face is listed in `incomplete`.
 */
export function cubemapGroups<T extends { name: string }>(
  images: T[],
): { groups: Map<string, Partial<Record<CubemapFace, T>>>; incomplete: { name: string; missing: CubemapFace[] }[] } {
  const groups = new Map<string, Partial<Record<CubemapFace, T>>>();
  for (const image of images) {
    const slash = image.name.indexOf("/");
    const face = image.name.slice(0, slash) as CubemapFace;
    if (slash < 0 || !CUBEMAP_FACES.includes(face)) continue;
    const rest = image.name.slice(slash + 1);
    const group = groups.get(rest) ?? {};
    group[face] = image;
    groups.set(rest, group);
  }
  const incomplete = [...groups].flatMap(([name, g]) => {
    const missing = CUBEMAP_FACES.filter((f) => !g[f]);
    return missing.length > 0 ? [{ name, missing }] : [];
  });
  return { groups, incomplete };
}

/** A camera of a rig in COLMAP's rig config: the images under `prefix`, their pose in the rig and their intrinsics. */
export interface RigConfigSensor {
  /** The folder of the camera's images ('' for images at the dataset's top). */
  prefix: string;
  from_rig: Rigid3;
  model: string;
  params: number[];
}

/**
 * A dataset's `rig_config`: COLMAP's rig config (as rig_configurator reads it), one entry per rig,
 * whose cameras are image prefixes; the first camera of each rig is its reference sensor.
 */
export function rigConfigOf(rigs: RigConfigSensor[][]): Record<string, unknown> {
  return {
    rigs: rigs.map((sensors) => ({
      cameras: sensors.map((s, i) => ({
        image_prefix: s.prefix === "" ? "" : `${s.prefix}/`,
        ...(i === 0 ? { ref_sensor: true } : {}),
        cam_from_rig_rotation: [s.from_rig.rotation.w, s.from_rig.rotation.x, s.from_rig.rotation.y, s.from_rig.rotation.z],
        cam_from_rig_translation: s.from_rig.translation,
        camera_model_name: s.model,
        camera_params: s.params,
      })),
    })),
  };
}

/** `derived_dataset` of the manifest and the task result (4.14 rules 2-4). */
export const DerivedDataset = z
  .object({
    dataset_id: Id,
    project_id: Id,
    name: z.string(),
    reused: z.boolean().describe("true when a retry of the task found the dataset it had registered (rule 4)"),
  })
  .meta({ id: "DerivedDataset" });
export type DerivedDataset = z.infer<typeof DerivedDataset>;

const Dims = { width: z.number().int().positive(), height: z.number().int().positive() };

/** `projection_manifest.json` (4.14 rule 2). */
export const ProjectionManifest = z
  .object({
    version: z.literal(1),
    projection: z.enum(PROJECTIONS),
    sampling: Sampling,
    source_dataset_id: Id,
    source_images: z.array(
      z.object({
        image_id: Id,
        name: z.string(),
        content_sha: z.string(),
        width: z.number().int().nullable(),
        height: z.number().int().nullable(),
      }),
    ),
    output_images: z.array(
      z.object({
        name: z.string(),
        path: z.string().describe("the file's path in the projection.images.v1 artifact"),
        blob_sha: z.string(),
        byte_size: z.number().int(),
        ...Dims,
        sources: z.array(z.string()).describe("source image names"),
        sensor: z.string().nullable().describe("the cubemap face or perspective view; null for a panorama"),
      }),
    ),
    geometry: z
      .object({
        sensors: z.array(
          z.object({ name: z.string(), model: z.literal("PINHOLE"), params: z.array(z.number()), sensor_from_rig: z.unknown() }),
        ),
        convention: z.string(),
      })
      .nullable()
      .describe("face or view geometry: each sensor's camera and sensor_from_rig (rig = the panorama's camera frame)"),
    derived_dataset: DerivedDataset.nullable(),
  })
  .meta({ id: "ProjectionManifest" });
export type ProjectionManifest = z.infer<typeof ProjectionManifest>;

/** The task result (4.14 rule 3): paths are inside the task's `projection.images.v1` artifact. */
export const ProjectionResult = z
  .object({ output_path: z.string(), num_files: z.number().int(), manifest_path: z.string(), derived_dataset: DerivedDataset.nullable() })
  .meta({ id: "ProjectionResult" });
export type ProjectionResult = z.infer<typeof ProjectionResult>;

// ---- `:to_cubemap` (4.13) ----

/** The body of `POST /v1/reconstructions/{rid}:to_cubemap`: the spec shows none; `face_size` is our optional addition (9.2). */
export const ToCubemapRequest = z
  .object({
    face_size: FaceSize.nullable().default(null).describe("pixels per face side, 64 to 8192; default a quarter of the widest panorama"),
    seq: z.number().int().min(1).optional().describe("the snapshot to convert; default the latest"),
  })
  .meta({ id: "ToCubemapRequest" });
export type ToCubemapRequest = z.infer<typeof ToCubemapRequest>;

/** A `to_cubemap` task: the snapshot (input artifacts `snapshot` and `submodel.<idx>`) sealed again as cubemap rigs. */
export type ToCubemapTaskParams = { to_cubemap: { face_size: number | null; seq: number; submodels: number[] } };
