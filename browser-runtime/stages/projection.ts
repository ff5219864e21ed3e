/**
 * @module The projection stage (spec 4.14): which images a projection request renders from a
 * dataset, with what geometry, under which names, and the derived dataset they make. Rendering is
 * the projector's (gpu/projection-gpu.ts: WGSL or wasm); decoding, encoding and storage are the
 * caller's, so the same code runs in a browser tab and in Node.
 */
import type { PackedImage, PerspectiveView } from "../../engine-wasm/ts/projection";
import { packRgba, rgbaBytes } from "../../engine-wasm/ts/projection";
import {
  CUBEMAP_FACES,
  type CubemapFace,
  type DatasetSnapshot,
  type DerivedDatasetRegister,
  type ProjectionManifest,
  type ProjectionTaskParams,
  type Rigid3,
  cubemapFaceParams,
  cubemapGroups,
  cubemapSensorFromRig,
  defaultFaceSize,
  extensionOf,
  quaternionOfMatrix,
  rigConfigOf,
  stemOf,
  viewRotation,
} from "../../protocol";
import type { Projector } from "../gpu/projection-gpu";
import type { DecodedImage } from "./extract";

type Request = ProjectionTaskParams["projection"];
type SourceImage = DatasetSnapshot["images"][number];

/** A camera of the output: a cubemap face or a perspective view (the rig's sensors). */
export interface Sensor {
  name: string;
  params: number[];
  /** sensor_from_rig (the rig frame = the panorama's camera frame). */
  from_rig: Rigid3;
}

/** One image to write: its name, which sources make it and how. */
interface Output {
  name: string;
  sources: SourceImage[];
  sensor: Sensor | null;
  render(images: PackedImage[]): Promise<PackedImage>;
}

export interface ProjectionIo {
  read(sha: string): Promise<Uint8Array>;
  decode(bytes: Uint8Array): Promise<DecodedImage>;
  encode(image: DecodedImage, format: "jpeg" | "png", quality: number): Promise<Uint8Array>;
  /** Stores an output image; answers its blob. */
  write(path: string, bytes: Uint8Array, mediaType: string): Promise<{ blob_sha: string; byte_size: number }>;
  progress(current: number, total: number): void;
  cancelPoint(): Promise<void>;
}

export interface ProjectedImage {
  name: string;
  blob_sha: string;
  byte_size: number;
  width: number;
  height: number;
  sources: string[];
  sensor: string | null;
}

export interface ProjectionRun {
  outputs: ProjectedImage[];
  sensors: Sensor[];
  /** The settings of the dataset the outputs make (4.14 rule 4), without its images. */
  dataset: Omit<DerivedDatasetRegister, "images">;
}

/** The face size of a cubemap request: as given, else a quarter of the widest panorama, within 64..8192. */
export function cubemapFaceSize(request: { face_size: number | null }, images: SourceImage[]): number {
  return request.face_size ?? defaultFaceSize(images.map((i) => i.width));
}

const transpose = (m: readonly number[]) => [m[0]!, m[3]!, m[6]!, m[1]!, m[4]!, m[7]!, m[2]!, m[5]!, m[8]!];

/** The views of a perspective request, as pinhole views and rig sensors. */
function perspectiveViews(request: Extract<Request, { projection: "equirectangular_to_perspective" }>) {
  const f = request.width / 2 / Math.tan(((request.fov_deg / 2) * Math.PI) / 180);
  return request.views.map((v) => {
    const panoFromCam = viewRotation(v.yaw_deg, v.pitch_deg, v.roll_deg);
    const view: PerspectiveView = {
      width: request.width,
      height: request.height,
      fx: f,
      fy: f,
      cx: request.width / 2,
      cy: request.height / 2,
      panoFromCam,
    };
    const sensor: Sensor = {
      name: v.name,
      params: [f, f, request.width / 2, request.height / 2],
      from_rig: { rotation: quaternionOfMatrix(transpose(panoFromCam)), translation: [0, 0, 0] },
    };
    return { view, sensor };
  });
}

/** What the request renders from the dataset's images, in a deterministic order. */
function plan(
  request: Request,
  images: SourceImage[],
  projector: Projector,
): { outputs: Output[]; sensors: Sensor[]; dataset: ProjectionRun["dataset"] } {
  const ext = extensionOf(request.output.format);
  const base = { respect_exif_orientation: false };
  switch (request.projection) {
    case "equirectangular_to_cubemap": {
      const size = cubemapFaceSize(request, images);
      const faces = CUBEMAP_FACES.filter((f) => request.faces.includes(f));
      const sensors = faces.map((face) => ({ name: face, params: cubemapFaceParams(size), from_rig: cubemapSensorFromRig(face) }));
      const outputs = images.flatMap((image) =>
        sensors.map((sensor) => ({
          name: `${sensor.name}/${stemOf(image.name)}.${ext}`,
          sources: [image],
          sensor,
          render: ([pano]: PackedImage[]) => projector.cubemapFace(pano!, sensor.name as CubemapFace, size, request.sampling),
        })),
      );
      const dataset = {
        ...base,
        camera_model: "PINHOLE" as const,
        intrinsics_mode: "per_folder" as const,
        is_spherical: false,
        rig_config: rigConfig(sensors, size),
      };
      return { outputs, sensors, dataset };
    }
    case "equirectangular_to_perspective": {
      const views = perspectiveViews(request);
      const outputs = images.flatMap((image) =>
        views.map(({ view, sensor }) => ({
          name: `${sensor.name}/${stemOf(image.name)}.${ext}`,
          sources: [image],
          sensor,
          render: ([pano]: PackedImage[]) => projector.perspective(pano!, view, request.sampling),
        })),
      );
      const sensors = views.map((v) => v.sensor);
      const dataset = {
        ...base,
        camera_model: "PINHOLE" as const,
        intrinsics_mode: "per_folder" as const,
        is_spherical: false,
        rig_config: rigConfig(sensors, null),
      };
      return { outputs, sensors, dataset };
    }
    case "cubemap_to_equirectangular": {
      const { groups } = cubemapGroups(images);
      const outputs = [...groups].map(([rest, group]) => {
        const faces = CUBEMAP_FACES.map((f) => group[f]!);
        const width = request.width ?? 4 * (faces[0]!.width ?? 1024);
        return {
          name: `${stemOf(rest)}.${ext}`,
          sources: faces,
          sensor: null,
          render: (decoded: PackedImage[]) => projector.equirectangular(decoded, width, request.sampling),
        };
      });
      const dataset = {
        ...base,
        camera_model: "SPHERICAL" as const,
        intrinsics_mode: "single_camera" as const,
        is_spherical: true,
        rig_config: null,
      };
      return { outputs, sensors: [], dataset };
    }
  }
}

/** COLMAP's rig config for the sensors, plus the cubemap's face size when it is one. */
function rigConfig(sensors: Sensor[], faceSize: number | null): Record<string, unknown> {
  return {
    ...rigConfigOf([sensors.map((s) => ({ prefix: s.name, from_rig: s.from_rig, model: "PINHOLE", params: s.params }))]),
    ...(faceSize !== null ? { "x-cubemap": { face_size: faceSize, faces: sensors.map((s) => s.name) } } : {}),
  };
}

/**
 * Renders what the request asks from the dataset's images, writing each output as it is made;
 * a source image is decoded once for all the outputs it feeds.
 */
export async function projectImages(
  request: Request,
  dataset: DatasetSnapshot,
  projector: Projector,
  io: ProjectionIo,
): Promise<ProjectionRun> {
  const { outputs, sensors, dataset: settings } = plan(request, dataset.images, projector);
  const mediaType = request.output.format === "png" ? "image/png" : "image/jpeg";
  const decoded = new Map<string, PackedImage>();
  const results: ProjectedImage[] = [];
  for (const [i, output] of outputs.entries()) {
    await io.cancelPoint();
    // Sources are decoded once: the outputs of one source (or one cubemap) are consecutive.
    for (const key of [...decoded.keys()]) if (!output.sources.some((s) => s.content_sha === key)) decoded.delete(key);
    const inputs: PackedImage[] = [];
    for (const source of output.sources) {
      let image = decoded.get(source.content_sha);
      if (!image) {
        const d = await io.decode(await io.read(source.content_sha));
        image = packRgba(d.data, d.width, d.height, d.channels);
        decoded.set(source.content_sha, image);
      }
      inputs.push(image);
    }
    const rendered = await output.render(inputs);
    const bytes = await io.encode(
      { data: rgbaBytes(rendered), width: rendered.width, height: rendered.height, channels: 4 },
      request.output.format,
      request.output.jpeg_quality,
    );
    const stored = await io.write(`images/${output.name}`, bytes, mediaType);
    results.push({
      name: output.name,
      ...stored,
      width: rendered.width,
      height: rendered.height,
      sources: output.sources.map((s) => s.name),
      sensor: output.sensor?.name ?? null,
    });
    io.progress(i + 1, outputs.length);
  }
  return { outputs: results, sensors, dataset: settings };
}

/** `projection_manifest.json` (4.14 rule 2). */
export function projectionManifest(
  request: Request,
  dataset: DatasetSnapshot,
  run: ProjectionRun,
  derived: ProjectionManifest["derived_dataset"],
): ProjectionManifest {
  return {
    version: 1,
    projection: request.projection,
    sampling: request.sampling,
    source_dataset_id: request.source_dataset_id,
    source_images: dataset.images.map((i) => ({
      image_id: i.image_id,
      name: i.name,
      content_sha: i.content_sha,
      width: i.width,
      height: i.height,
    })),
    output_images: run.outputs.map((o) => ({ ...o, path: `images/${o.name}` })),
    geometry:
      run.sensors.length > 0
        ? {
            sensors: run.sensors.map((s) => ({ name: s.name, model: "PINHOLE" as const, params: s.params, sensor_from_rig: s.from_rig })),
            convention:
              "OpenCV image axes (x right, y down, z forward); rig frame = the panorama's camera frame (SPHERICAL: the centre column looks along +z, y down); spec 4.14 rule 7",
          }
        : null,
    derived_dataset: derived,
  };
}
