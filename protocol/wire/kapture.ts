/**
 * @module Reading a kapture 1.1 dataset's listings (naver/kapture kapture_format.adoc), as
 * `POST /v1/projects/{pid}/datasets:import_kapture` (4.2) imports them; browser-runtime's
 * `export.kapture` writes the same files. Text files of comma-separated rows; `#` lines are comments.
 *
 *   sensors/sensors.txt          sensor_device_id, name, sensor_type, [sensor_params]+
 *                                (a `camera`'s params: model, width, height, COLMAP model params)
 *   sensors/records_camera.txt   timestamp, device_id, image_path  (the image at sensors/records_data/<image_path>)
 *   sensors/trajectories.txt     timestamp, device_id, qw, qx, qy, qz, tx, ty, tz  (optional; world to device:
 *                                cam_from_world, or rig_from_world when device_id is a rig)
 *   sensors/rigs.txt             rig_device_id, sensor_device_id, qw, qx, qy, qz, tx, ty, tz  (optional; rig to sensor)
 *
 * Sensors of other types (gnss, lidar, wifi, ...) are skipped. Every problem is reported with its
 * file and line, all of them at once.
 */
import { CAMERA_MODELS } from "../camera-models";
import { ImageName } from "../schemas/dataset";
import { UNIT_QUATERNION_TOLERANCE } from "../schemas/geo";
import { type RigConfigSensor, rigConfigOf } from "../projection";
import type { Rigid3 } from "../schemas/snapshot";

export const KAPTURE_SENSORS = "sensors/sensors.txt";
export const KAPTURE_RECORDS = "sensors/records_camera.txt";
export const KAPTURE_TRAJECTORIES = "sensors/trajectories.txt";
export const KAPTURE_RIGS = "sensors/rigs.txt";
/** Where a record's image lies, relative to the dataset root. */
export const KAPTURE_IMAGE_ROOT = "sensors/records_data";

export interface KaptureCamera {
  sensor_id: string;
  name: string;
  model: string;
  width: number;
  height: number;
  params: number[];
}

export interface KaptureRecord {
  timestamp: string;
  sensor_id: string;
  image_path: string;
  /** From the trajectory of the camera at this timestamp, or of a rig holding it; null when there is none. */
  cam_from_world: Rigid3 | null;
}

export interface KaptureListings {
  cameras: KaptureCamera[];
  records: KaptureRecord[];
  /** The cameras of each rig with their `sensor_from_rig` (rigs.txt). */
  rigs: Map<string, Map<string, Rigid3>>;
}

/** A problem of one file, at one line (1-based) or of the whole file (null). */
export interface KaptureProblem {
  file: string;
  line: number | null;
  message: string;
}

export class KaptureError extends Error {
  constructor(readonly problems: KaptureProblem[]) {
    super(problems.map((p) => `${p.file}${p.line !== null ? `:${p.line}` : ""}: ${p.message}`).join("; "));
  }
}

interface Row {
  line: number;
  fields: string[];
}

function rowsOf(text: string): Row[] {
  return text.split("\n").flatMap((raw, i) => {
    const line = raw.replace(/\r$/, "").trim();
    return line === "" || line.startsWith("#") ? [] : [{ line: i + 1, fields: line.split(",").map((f) => f.trim()) }];
  });
}

const quat = (q: Rigid3["rotation"]) => [q.w, q.x, q.y, q.z] as const;

/** `a * b` (b first). */
function compose(a: Rigid3, b: Rigid3): Rigid3 {
  const [aw, ax, ay, az] = quat(a.rotation);
  const [bw, bx, by, bz] = quat(b.rotation);
  const rotation = {
    w: aw * bw - ax * bx - ay * by - az * bz,
    x: aw * bx + ax * bw + ay * bz - az * by,
    y: aw * by - ax * bz + ay * bw + az * bx,
    z: aw * bz + ax * by - ay * bx + az * bw,
  };
  // a's rotation applied to b's translation: v + 2w (u x v) + 2 u x (u x v), u = (ax, ay, az).
  const v = b.translation;
  const c1 = [ay * v[2] - az * v[1], az * v[0] - ax * v[2], ax * v[1] - ay * v[0]];
  const c2 = [ay * c1[2]! - az * c1[1]!, az * c1[0]! - ax * c1[2]!, ax * c1[1]! - ay * c1[0]!];
  const t = (i: number) => v[i]! + 2 * (aw * c1[i]! + c2[i]!) + a.translation[i]!;
  return { rotation, translation: [t(0), t(1), t(2)] };
}

/**
 * The listings of a kapture dataset: `texts` by file (trajectories and rigs may be absent);
 * `hasImage(path)` says whether the image of a record is in the archive. KaptureError with every problem found.
 */
export function parseKapture(
  texts: { sensors: string; records: string; trajectories: string | null; rigs: string | null },
  hasImage: (imagePath: string) => boolean,
): KaptureListings {
  const problems: KaptureProblem[] = [];
  const problem = (file: string, line: number | null, message: string) => problems.push({ file, line, message });

  /** A pose from 7 fields (qw qx qy qz tx ty tz), the quaternion normalised; null (reported) when malformed. */
  const poseOf = (file: string, row: Row, fields: string[]): Rigid3 | null => {
    const n = fields.map(Number);
    if (fields.some((f) => f === "") || n.some((x) => !Number.isFinite(x))) {
      problem(file, row.line, `qw, qx, qy, qz, tx, ty, tz must be finite numbers, got '${fields.join(", ")}'`);
      return null;
    }
    const norm = Math.hypot(n[0]!, n[1]!, n[2]!, n[3]!);
    if (Math.abs(norm - 1) > UNIT_QUATERNION_TOLERANCE) {
      problem(file, row.line, `the rotation is not a unit quaternion (|q| = ${norm.toPrecision(6)})`);
      return null;
    }
    return { rotation: { w: n[0]! / norm, x: n[1]! / norm, y: n[2]! / norm, z: n[3]! / norm }, translation: [n[4]!, n[5]!, n[6]!] };
  };

  const cameras = new Map<string, KaptureCamera>();
  const sensorIds = new Set<string>();
  for (const row of rowsOf(texts.sensors)) {
    const [id, name, type, model, width, height, ...params] = row.fields;
    if (!id || type === undefined) {
      problem(KAPTURE_SENSORS, row.line, "expected sensor_device_id, name, sensor_type, [sensor_params]+");
      continue;
    }
    if (sensorIds.has(id)) problem(KAPTURE_SENSORS, row.line, `sensor '${id}' is listed twice`);
    sensorIds.add(id);
    if (type !== "camera") continue;
    const info = CAMERA_MODELS.find((m) => m.name === model);
    if (!info || info.name === "SPHERICAL") {
      problem(KAPTURE_SENSORS, row.line, `camera '${id}': unsupported camera model '${model ?? ""}' (COLMAP's models are read)`);
      continue;
    }
    const w = Number(width);
    const h = Number(height);
    const values = params.map(Number);
    if (!Number.isInteger(w) || !Number.isInteger(h) || w <= 0 || h <= 0) {
      problem(KAPTURE_SENSORS, row.line, `camera '${id}': width and height must be positive integers, got '${width}', '${height}'`);
    } else if (values.length !== info.params.length || values.some((x) => !Number.isFinite(x)) || params.some((p) => p === "")) {
      problem(
        KAPTURE_SENSORS,
        row.line,
        `camera '${id}': ${info.name} takes ${info.params.length} numbers (${info.params.join(", ")}), got '${params.join(", ")}'`,
      );
    } else {
      cameras.set(id, { sensor_id: id, name: name ?? "", model: info.name, width: w, height: h, params: values });
    }
  }
  if (cameras.size === 0 && problems.length === 0) problem(KAPTURE_SENSORS, null, "lists no camera sensor");

  const rigs = new Map<string, Map<string, Rigid3>>();
  for (const row of texts.rigs === null ? [] : rowsOf(texts.rigs)) {
    const [rig, sensor, ...pose] = row.fields;
    if (!rig || !sensor || pose.length !== 7) {
      problem(KAPTURE_RIGS, row.line, "expected rig_device_id, sensor_device_id, qw, qx, qy, qz, tx, ty, tz");
      continue;
    }
    if (sensorIds.has(rig)) problem(KAPTURE_RIGS, row.line, `rig '${rig}' has the id of a sensor`);
    if (!sensorIds.has(sensor)) problem(KAPTURE_RIGS, row.line, `sensor '${sensor}' is not in ${KAPTURE_SENSORS}`);
    const sensorFromRig = poseOf(KAPTURE_RIGS, row, pose);
    const members = rigs.get(rig) ?? new Map<string, Rigid3>();
    if (members.has(sensor)) problem(KAPTURE_RIGS, row.line, `sensor '${sensor}' is in rig '${rig}' twice`);
    if (sensorFromRig) members.set(sensor, sensorFromRig);
    rigs.set(rig, members);
  }

  const trajectories = new Map<string, Rigid3>();
  for (const row of texts.trajectories === null ? [] : rowsOf(texts.trajectories)) {
    const [timestamp, device, ...pose] = row.fields;
    if (!timestamp || !device || pose.length !== 7) {
      problem(KAPTURE_TRAJECTORIES, row.line, "expected timestamp, device_id, qw, qx, qy, qz, tx, ty, tz");
      continue;
    }
    if (!/^\d+$/.test(timestamp)) problem(KAPTURE_TRAJECTORIES, row.line, `timestamp '${timestamp}' is not a non-negative integer`);
    if (!cameras.has(device) && !rigs.has(device))
      problem(KAPTURE_TRAJECTORIES, row.line, `device '${device}' is neither a camera of ${KAPTURE_SENSORS} nor a rig of ${KAPTURE_RIGS}`);
    const key = `${timestamp},${device}`;
    if (trajectories.has(key)) problem(KAPTURE_TRAJECTORIES, row.line, `device '${device}' has two poses at timestamp ${timestamp}`);
    const fromWorld = poseOf(KAPTURE_TRAJECTORIES, row, pose);
    if (fromWorld) trajectories.set(key, fromWorld);
  }

  const records: KaptureRecord[] = [];
  const paths = new Set<string>();
  for (const row of rowsOf(texts.records)) {
    const [timestamp, sensor, imagePath, ...rest] = row.fields;
    if (!timestamp || !sensor || !imagePath || rest.length > 0) {
      problem(KAPTURE_RECORDS, row.line, "expected timestamp, device_id, image_path");
      continue;
    }
    const before = problems.length;
    if (!/^\d+$/.test(timestamp)) problem(KAPTURE_RECORDS, row.line, `timestamp '${timestamp}' is not a non-negative integer`);
    if (!cameras.has(sensor)) problem(KAPTURE_RECORDS, row.line, `device '${sensor}' is not a camera of ${KAPTURE_SENSORS}`);
    const name = ImageName.safeParse(imagePath);
    if (!name.success) problem(KAPTURE_RECORDS, row.line, `image path '${imagePath}' ${name.error.issues[0]!.message}`);
    else if (paths.has(imagePath)) problem(KAPTURE_RECORDS, row.line, `image path '${imagePath}' is recorded twice`);
    else if (!hasImage(imagePath)) problem(KAPTURE_RECORDS, row.line, `image '${KAPTURE_IMAGE_ROOT}/${imagePath}' is not in the archive`);
    paths.add(imagePath);
    if (problems.length > before) continue;
    let pose = trajectories.get(`${timestamp},${sensor}`) ?? null;
    for (const [rig, members] of rigs) {
      const rigFromWorld = trajectories.get(`${timestamp},${rig}`);
      const sensorFromRig = members.get(sensor);
      if (!pose && rigFromWorld && sensorFromRig) pose = compose(sensorFromRig, rigFromWorld);
    }
    records.push({ timestamp, sensor_id: sensor, image_path: imagePath, cam_from_world: pose });
  }
  if (records.length === 0 && problems.length === 0) problem(KAPTURE_RECORDS, null, "lists no camera record");
  if (problems.length > 0) throw new KaptureError(problems);
  return { cameras: [...cameras.values()], records, rigs };
}

/** The inverse of a rigid transform. */
function invert(a: Rigid3): Rigid3 {
  const rotation = { w: a.rotation.w, x: -a.rotation.x, y: -a.rotation.y, z: -a.rotation.z };
  const rotated = compose({ rotation, translation: [0, 0, 0] }, { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: a.translation });
  return { rotation, translation: [-rotated.translation[0]!, -rotated.translation[1]!, -rotated.translation[2]!] };
}

const IDENTITY: Rigid3 = { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [0, 0, 0] };

/**
 * The sensors' rigs and intrinsics as a dataset's `rig_config` (COLMAP's rig config, as
 * protocol/projection.ts writes it): a rig of rigs.txt is one rig whose first recorded camera is
 * its reference (the rig's frame moved onto it, as COLMAP requires), and each recorded camera in no
 * rig is a rig of its own, so every camera's model and params are kept. A rig config names a
 * camera's images by their folder: a camera whose records share a folder with another camera's
 * cannot be named so, and the rigs holding such cameras are left out (`skipped` names them);
 * null when nothing is left.
 */
export function kaptureRigConfig(listings: KaptureListings): { rig_config: Record<string, unknown> | null; skipped: string[] } {
  const folderOf = (p: string) => p.slice(0, Math.max(0, p.lastIndexOf("/")));
  const folders = new Map<string, Set<string>>();
  for (const r of listings.records) folders.set(r.sensor_id, (folders.get(r.sensor_id) ?? new Set()).add(folderOf(r.image_path)));
  const owners = new Map<string, number>();
  for (const set of folders.values()) for (const f of set) owners.set(f, (owners.get(f) ?? 0) + 1);
  // A camera's folder: the one folder holding its records and no other camera's ('' holds every folder when alone).
  const folder = (sensor: string): string | null => {
    if (folders.size === 1) return folders.get(sensor)!.size === 1 ? [...folders.get(sensor)!][0]! : "";
    const own = [...folders.get(sensor)!];
    const nested = (f: string) => [...owners.keys()].some((o) => o !== f && o.startsWith(`${f}/`));
    return own.length === 1 && own[0] !== "" && owners.get(own[0]!) === 1 && !nested(own[0]!) ? own[0]! : null;
  };
  const cameras = new Map(listings.cameras.map((c) => [c.sensor_id, c]));
  const rigs: RigConfigSensor[][] = [];
  const skipped: string[] = [];
  const inRig = new Set<string>();
  for (const [rig, members] of listings.rigs) {
    const recorded = [...members].filter(([sensor]) => folders.has(sensor));
    recorded.forEach(([sensor]) => inRig.add(sensor));
    if (recorded.length === 0) continue;
    if (recorded.some(([sensor]) => folder(sensor) === null)) {
      skipped.push(rig);
      continue;
    }
    const rigFromRef = invert(recorded[0]![1]);
    rigs.push(
      recorded.map(([sensor, fromRig]) => {
        const c = cameras.get(sensor)!;
        return { prefix: folder(sensor)!, from_rig: compose(fromRig, rigFromRef), model: c.model, params: c.params };
      }),
    );
  }
  for (const sensor of folders.keys()) {
    if (inRig.has(sensor)) continue;
    const prefix = folder(sensor);
    if (prefix === null) {
      skipped.push(sensor);
      continue;
    }
    const c = cameras.get(sensor)!;
    rigs.push([{ prefix, from_rig: IDENTITY, model: c.model, params: c.params }]);
  }
  return { rig_config: rigs.length > 0 ? rigConfigOf(rigs) : null, skipped };
}
