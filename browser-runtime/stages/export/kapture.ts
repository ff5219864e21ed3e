/**
 * @module `export.kapture`: a kapture 1.1 dataset (naver/kapture kapture_format.adoc). Every text
 * file starts with `# kapture format: 1.1`, then a `#` line naming its columns, then CSV rows.
 *
 *   sensors/sensors.txt          sensor_device_id, name, sensor_type, model, w, h, params...
 *                                (one `camera` sensor per snapshot camera, COLMAP model names)
 *   sensors/records_camera.txt   timestamp, device_id, image_path   (timestamp = image_id)
 *   sensors/trajectories.txt     timestamp, device_id, qw, qx, qy, qz, tx, ty, tz
 *                                (world to device, "same as in colmap": cam_from_world as is)
 *   reconstruction/points3d.txt  X, Y, Z, R, G, B   (row index = kapture point3d_id)
 *   reconstruction/keypoints/<type>/keypoints.txt   name, dtype, dsize  ("<type>, float32, 2")
 *   reconstruction/keypoints/<type>/<image_path>.kpt  raw little-endian float32 x y per keypoint,
 *                                in kp_idx order (COLMAP pixel coordinates, as kapture's COLMAP import keeps them);
 *                                with `packKeypoints`, these files are the members of
 *                                reconstruction/keypoints/<type>/keypoints.tar instead (kapture.io.tar's layout)
 *   reconstruction/observations.txt  point3d_id, keypoints_type, [image_path, feature_id]*
 *   sensors/records_data/<image_path>  the photos, when given
 *
 * Image paths are the snapshot image names; kapture forbids commas in values, so a name with a
 * comma is refused.
 */
import { formatG } from "./number-format";
import { tarArchive } from "../../../protocol/wire/tar";
import { ExportError, requireColmapCameras, type ExportModel } from "./export-model";

export const KAPTURE_DEFAULT_KEYPOINTS_TYPE = "edgesfm";
/** The files a kapture export holds besides one .kpt per image: sensors, records, trajectories, points, observations, keypoints.txt. */
export const KAPTURE_FIXED_FILES = 6;
const HEADER = "# kapture format: 1.1";

function csv(header: string, rows: string[][]): Uint8Array {
  return new TextEncoder().encode([HEADER, header, ...rows.map((r) => r.join(", "))].join("\n") + "\n");
}

function sensorId(cameraId: number): string {
  return `cam${cameraId}`;
}

export function exportKapture(model: ExportModel, options: { keypointsType?: string; packKeypoints?: boolean }): Map<string, Uint8Array> {
  requireColmapCameras(model, "kapture");
  const type = options.keypointsType ?? KAPTURE_DEFAULT_KEYPOINTS_TYPE;
  for (const image of model.images) {
    if (image.name.includes(","))
      throw new ExportError("unsupported_image_name", `kapture paths cannot hold commas: image ${image.image_id} (${image.name})`);
  }
  const files = new Map<string, Uint8Array>();
  files.set(
    "sensors/sensors.txt",
    csv(
      "# sensor_device_id, name, sensor_type, [sensor_params]+",
      model.cameras.map((c) => [
        sensorId(c.camera_id),
        "",
        "camera",
        c.model,
        String(c.width),
        String(c.height),
        ...c.params.map((p) => formatG(p)),
      ]),
    ),
  );
  files.set(
    "sensors/records_camera.txt",
    csv(
      "# timestamp, device_id, image_path",
      model.images.map((i) => [String(i.image_id), sensorId(i.camera_id), i.name]),
    ),
  );
  files.set(
    "sensors/trajectories.txt",
    csv(
      "# timestamp, device_id, qw, qx, qy, qz, tx, ty, tz",
      model.images.map((i) => {
        const { w, x, y, z } = i.cam_from_world.rotation;
        return [String(i.image_id), sensorId(i.camera_id), ...[w, x, y, z, ...i.cam_from_world.translation].map((v) => formatG(v))];
      }),
    ),
  );
  files.set(
    "reconstruction/points3d.txt",
    csv(
      "# X, Y, Z, R, G, B",
      model.points.map((p) => [...p.xyz.map((v) => formatG(v)), ...p.rgb.map(String)]),
    ),
  );
  files.set(`reconstruction/keypoints/${type}/keypoints.txt`, csv("# name, dtype, dsize", [[type, "float32", "2"]]));
  const keypoints = model.images.map((image): [string, Uint8Array] => {
    const kpt = new Uint8Array(8 * image.points2D.length);
    const view = new DataView(kpt.buffer);
    image.points2D.forEach((p, k) => {
      view.setFloat32(8 * k, p.xy[0], true);
      view.setFloat32(8 * k + 4, p.xy[1], true);
    });
    return [`${image.name}.kpt`, kpt];
  });
  if (options.packKeypoints) files.set(`reconstruction/keypoints/${type}/keypoints.tar`, tarArchive(keypoints));
  else for (const [name, kpt] of keypoints) files.set(`reconstruction/keypoints/${type}/${name}`, kpt);
  files.set(
    "reconstruction/observations.txt",
    csv(
      "# point3d_id, keypoints_type, [image_path, feature_id]*",
      model.points.flatMap((p, row) =>
        p.track.length === 0
          ? []
          : [[String(row), type, ...p.track.flatMap((el) => [model.imageById.get(el.imageId)!.name, String(el.point2DIdx)])]],
      ),
    ),
  );
  return files;
}
