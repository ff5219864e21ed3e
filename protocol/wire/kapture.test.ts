import { describe, expect, it } from "vitest";
import { kaptureRigConfig, parseKapture } from "./kapture";

const SENSORS = [
  "# sensor_device_id, name, sensor_type, [sensor_params]+",
  "left, , camera, PINHOLE, 640, 480, 500, 501, 320, 240",
  "right, , camera, SIMPLE_RADIAL, 640, 480, 510, 320, 240, 0.01",
  "top, , camera, PINHOLE, 800, 600, 400, 400, 400, 300",
].join("\n");
// The rig's frame is 1 m left of the left camera; the right camera is turned 90 degrees about y.
const S = Math.SQRT1_2;
const RIGS = [
  "# rig_device_id, sensor_device_id, qw, qx, qy, qz, tx, ty, tz",
  "rig, left, 1, 0, 0, 0, -1, 0, 0",
  `rig, right, ${S}, 0, ${S}, 0, -2, 0, 0`,
].join("\n");

const listings = (records: string[], rigs: string | null = RIGS) =>
  parseKapture({ sensors: SENSORS, records: records.join("\n"), trajectories: null, rigs }, () => true);

describe("kaptureRigConfig: the sensors' rigs and intrinsics as COLMAP's rig config", () => {
  it("a rig of cameras in their own folders, its frame moved onto its first camera; a camera outside it is a rig of its own", () => {
    const { rig_config, skipped } = kaptureRigConfig(
      listings(["1, left, l/0.jpg", "1, right, r/0.jpg", "2, left, l/1.jpg", "1, top, t/0.jpg"]),
    );
    expect(skipped).toEqual([]);
    const [rig, top] = (rig_config as { rigs: { cameras: Record<string, unknown>[] }[] }).rigs;
    expect(rig!.cameras[0]).toEqual({
      image_prefix: "l/",
      ref_sensor: true,
      cam_from_rig_rotation: [1, 0, 0, 0],
      cam_from_rig_translation: [0, 0, 0],
      camera_model_name: "PINHOLE",
      camera_params: [500, 501, 320, 240],
    });
    const right = rig!.cameras[1]!;
    expect(right).toMatchObject({ image_prefix: "r/", camera_model_name: "SIMPLE_RADIAL", camera_params: [510, 320, 240, 0.01] });
    expect(right.ref_sensor).toBeUndefined();
    // right_from_left = right_from_rig * rig_from_left: rig_from_left moves by +1 in x, then the turn maps x to -z.
    (right.cam_from_rig_rotation as number[]).forEach((v, i) => expect(v).toBeCloseTo([S, 0, S, 0][i]!, 12));
    (right.cam_from_rig_translation as number[]).forEach((v, i) => expect(v).toBeCloseTo([-2, 0, -1][i]!, 12));
    expect(top!.cameras).toEqual([
      expect.objectContaining({ image_prefix: "t/", ref_sensor: true, camera_model_name: "PINHOLE", camera_params: [400, 400, 400, 300] }),
    ]);
  });

  it("one camera names every image, in folders or not", () => {
    const { rig_config } = kaptureRigConfig(listings(["1, top, a.jpg", "2, top, b/c.jpg"], null));
    expect((rig_config as { rigs: { cameras: { image_prefix: string }[] }[] }).rigs[0]!.cameras[0]!.image_prefix).toBe("");
  });

  it("cameras sharing a folder, at the top or nested in another's, cannot be named: their rigs are left out and said", () => {
    expect(kaptureRigConfig(listings(["1, left, a.jpg", "1, right, b.jpg", "1, top, t/0.jpg"]))).toMatchObject({
      skipped: ["rig"],
      rig_config: { rigs: [{ cameras: [{ image_prefix: "t/" }] }] },
    });
    // 'l/' would name the images of 'l/t/' too.
    expect(kaptureRigConfig(listings(["1, left, l/0.jpg", "1, right, r/0.jpg", "1, top, l/t/0.jpg"], null))).toEqual({
      skipped: ["left"],
      rig_config: {
        rigs: [
          { cameras: [expect.objectContaining({ image_prefix: "r/" })] },
          { cameras: [expect.objectContaining({ image_prefix: "l/t/" })] },
        ],
      },
    });
  });
});
