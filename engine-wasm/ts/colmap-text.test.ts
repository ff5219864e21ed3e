import { describe, expect, it } from "vitest";
import { findImageByName, parseColmapTextModel, readColmapTextModel, sharedObservations } from "./colmap-text";

const cameras = `# Camera list with one line of data per camera:
#   CAMERA_ID, MODEL, WIDTH, HEIGHT, PARAMS[]
1 SIMPLE_RADIAL 1024 768 728.3 512 384 -0.0093
2 PINHOLE 640 480 500 501 320 240
`;
const images = `# Image list with two lines of data per image:
1 1 0 0 0 0.5 -1 2 1 first image.jpg
10.5 20.5 7 30 40 -1 50.25 60.75 8
2 0.7071067811865476 0 0.7071067811865476 0 1 2 3 2 b.jpg

`;
const points3D = `# 3D point list
7 1 2 3 255 128 0 0.5 1 0 2 1
8 -1 -2 -3 0 0 0 1.25 1 2
`;

describe("COLMAP text model reader", () => {
  const model = parseColmapTextModel({ cameras, images, points3D });

  it("reads cameras with their model and parameters", () => {
    expect(model.cameras.get(1)).toEqual({
      cameraId: 1,
      model: "SIMPLE_RADIAL",
      width: 1024,
      height: 768,
      params: [728.3, 512, 384, -0.0093],
    });
    expect(model.cameras.get(2)?.params).toEqual([500, 501, 320, 240]);
  });

  it("reads images: pose, camera, names with spaces, and keypoints with their POINT3D_IDs", () => {
    const first = model.images.get(1)!;
    expect(first.qvec).toEqual([1, 0, 0, 0]);
    expect(first.tvec).toEqual([0.5, -1, 2]);
    expect(first.name).toBe("first image.jpg");
    expect(Array.from(first.xys)).toEqual([10.5, 20.5, 30, 40, 50.25, 60.75]);
    expect(Array.from(first.point3DIds)).toEqual([7, -1, 8]);
    // An image whose POINTS2D line is empty has no keypoints.
    expect(model.images.get(2)?.xys.length).toBe(0);
    expect(findImageByName(model, "b.jpg")?.cameraId).toBe(2);
  });

  it("reads 3D points with colour, error and track", () => {
    expect(model.points3D.get(7)).toEqual({
      point3DId: 7,
      xyz: [1, 2, 3],
      rgb: [255, 128, 0],
      error: 0.5,
      track: [
        { imageId: 1, point2DIdx: 0 },
        { imageId: 2, point2DIdx: 1 },
      ],
    });
  });

  it("pairs keypoints of two images that observe the same 3D point", () => {
    const a = model.images.get(1)!;
    const b = { ...a, point3DIds: Float64Array.from([-1, 8, 9, 7]) };
    expect(sharedObservations(a, b)).toEqual([
      [0, 3],
      [2, 1],
    ]);
  });

  it("reads the shared reference models from disk", async () => {
    const lund = await readColmapTextModel(new URL("../../../shared/datasets/opensfm-lund/reference", import.meta.url).pathname);
    expect(lund.cameras.size).toBe(1);
    expect(lund.images.size).toBe(29);
    expect(lund.points3D.size).toBe(1750);
    for (const point of lund.points3D.values()) {
      for (const { imageId, point2DIdx } of point.track) {
        expect(lund.images.get(imageId)!.point3DIds[point2DIdx]).toBe(point.point3DId);
      }
    }
  });
});
