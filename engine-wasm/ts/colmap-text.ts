/**
 * @module Reader for COLMAP's text model format (cameras.txt, images.txt, points3D.txt),
 * as written by `colmap model_converter --output_type TXT` (COLMAP 3.8). Pure parsing of
 * strings (runs anywhere) plus `readColmapTextModel(dir)` for Node.
 *
 * Conventions kept from COLMAP: poses are cam_from_world with a Hamilton quaternion
 * (w, x, y, z); keypoint coordinates have pixel centres at +0.5; a point2D without a 3D
 * point has POINT3D_ID -1.
 */

export interface ColmapCamera {
  cameraId: number;
  model: string;
  width: number;
  height: number;
  params: number[];
}

export interface ColmapImage {
  imageId: number;
  /** cam_from_world rotation, Hamilton quaternion [w, x, y, z]. */
  qvec: [number, number, number, number];
  /** cam_from_world translation. */
  tvec: [number, number, number];
  cameraId: number;
  name: string;
  /** Keypoint coordinates, interleaved x0 y0 x1 y1 ...; index = point2D index. */
  xys: Float64Array;
  /** POINT3D_ID of each keypoint, -1 when it is in no track. */
  point3DIds: Float64Array;
}

export interface ColmapTrackElement {
  imageId: number;
  point2DIdx: number;
}

export interface ColmapPoint3D {
  point3DId: number;
  xyz: [number, number, number];
  rgb: [number, number, number];
  error: number;
  track: ColmapTrackElement[];
}

export interface ColmapModel {
  cameras: Map<number, ColmapCamera>;
  images: Map<number, ColmapImage>;
  points3D: Map<number, ColmapPoint3D>;
}

/** Lines that carry data: comments (#) and blank lines dropped, fields split. */
function dataLines(text: string): string[][] {
  const rows: string[][] = [];
  for (const line of text.split(/\r?\n/)) {
    const trimmed = line.trim();
    if (trimmed.startsWith("#")) continue;
    rows.push(trimmed === "" ? [] : trimmed.split(/\s+/));
  }
  return rows;
}

function numbers(fields: string[], from: number, to = fields.length): number[] {
  const out: number[] = [];
  for (let i = from; i < to; i += 1) {
    const value = Number(fields[i]);
    if (!Number.isFinite(value)) throw new Error(`colmap-text: not a number: ${fields[i]}`);
    out.push(value);
  }
  return out;
}

export function parseCamerasText(text: string): Map<number, ColmapCamera> {
  const cameras = new Map<number, ColmapCamera>();
  for (const fields of dataLines(text)) {
    if (fields.length === 0) continue;
    if (fields.length < 4) throw new Error(`colmap-text: short camera line: ${fields.join(" ")}`);
    const [cameraId, width, height] = numbers(fields, 0, 1).concat(numbers(fields, 2, 4));
    cameras.set(cameraId!, {
      cameraId: cameraId!,
      model: fields[1]!,
      width: width!,
      height: height!,
      params: numbers(fields, 4),
    });
  }
  return cameras;
}

/** images.txt holds two lines per image: the pose line and the (possibly empty) POINTS2D line. */
export function parseImagesText(text: string): Map<number, ColmapImage> {
  const images = new Map<number, ColmapImage>();
  const rows = dataLines(text);
  // Blank lines matter only as empty POINTS2D lines; skip leading blanks before a pose line.
  let i = 0;
  while (i < rows.length) {
    const pose = rows[i]!;
    i += 1;
    if (pose.length === 0) continue;
    if (pose.length < 10) throw new Error(`colmap-text: short image line: ${pose.join(" ")}`);
    const points = rows[i] ?? [];
    i += 1;
    if (points.length % 3 !== 0) throw new Error(`colmap-text: POINTS2D of image ${pose[0]} not in triples`);
    const values = numbers(pose, 0, 8).concat(numbers(pose, 8, 9));
    const count = points.length / 3;
    const xys = new Float64Array(2 * count);
    const point3DIds = new Float64Array(count);
    for (let k = 0; k < count; k += 1) {
      xys[2 * k] = Number(points[3 * k]);
      xys[2 * k + 1] = Number(points[3 * k + 1]);
      point3DIds[k] = Number(points[3 * k + 2]);
    }
    const imageId = values[0]!;
    images.set(imageId, {
      imageId,
      qvec: [values[1]!, values[2]!, values[3]!, values[4]!],
      tvec: [values[5]!, values[6]!, values[7]!],
      cameraId: values[8]!,
      // Names may contain spaces: everything after CAMERA_ID.
      name: pose.slice(9).join(" "),
      xys,
      point3DIds,
    });
  }
  return images;
}

export function parsePoints3DText(text: string): Map<number, ColmapPoint3D> {
  const points = new Map<number, ColmapPoint3D>();
  for (const fields of dataLines(text)) {
    if (fields.length === 0) continue;
    if (fields.length < 8 || (fields.length - 8) % 2 !== 0) {
      throw new Error(`colmap-text: malformed point line: ${fields.slice(0, 10).join(" ")}`);
    }
    const v = numbers(fields, 0);
    const track: ColmapTrackElement[] = [];
    for (let k = 8; k < v.length; k += 2) track.push({ imageId: v[k]!, point2DIdx: v[k + 1]! });
    points.set(v[0]!, {
      point3DId: v[0]!,
      xyz: [v[1]!, v[2]!, v[3]!],
      rgb: [v[4]!, v[5]!, v[6]!],
      error: v[7]!,
      track,
    });
  }
  return points;
}

export function parseColmapTextModel(texts: { cameras: string; images: string; points3D?: string }): ColmapModel {
  return {
    cameras: parseCamerasText(texts.cameras),
    images: parseImagesText(texts.images),
    points3D: texts.points3D === undefined ? new Map() : parsePoints3DText(texts.points3D),
  };
}

/** Node only: reads `dir`/{cameras,images,points3D}.txt. */
export async function readColmapTextModel(dir: string, options: { points3D?: boolean } = {}): Promise<ColmapModel> {
  const fsModule = "node:fs/promises";
  const fs = (await import(/* @vite-ignore */ fsModule)) as typeof import("node:fs/promises");
  const read = (name: string) => fs.readFile(`${dir}/${name}`, "utf8");
  return parseColmapTextModel({
    cameras: await read("cameras.txt"),
    images: await read("images.txt"),
    ...(options.points3D === false ? {} : { points3D: await read("points3D.txt") }),
  });
}

export function findImageByName(model: ColmapModel, name: string): ColmapImage | undefined {
  for (const image of model.images.values()) if (image.name === name) return image;
  return undefined;
}

/**
 * The keypoint pairs of two images that observe the same 3D point: [idx1, idx2] per shared
 * POINT3D_ID (the reference's true correspondences), in image1's keypoint order.
 */
export function sharedObservations(image1: ColmapImage, image2: ColmapImage): Array<[number, number]> {
  const byPoint = new Map<number, number>();
  image2.point3DIds.forEach((id, idx) => {
    if (id >= 0) byPoint.set(id, idx);
  });
  const pairs: Array<[number, number]> = [];
  image1.point3DIds.forEach((id, idx) => {
    const other = id >= 0 ? byPoint.get(id) : undefined;
    if (other !== undefined) pairs.push([idx, other]);
  });
  return pairs;
}
