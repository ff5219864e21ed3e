import { describe, expect, it } from "vitest";
import { DEFAULT_FOCAL_LENGTH_FACTOR, aspectGroups, datasetCameras, initialCamera, twoViewCamera } from "./cameras";

const settings = (intrinsics_mode: string, focals: Array<number | null>) => ({
  camera_model: "SIMPLE_RADIAL",
  intrinsics_mode,
  images: focals.map((focal_length_35mm, i) => ({ name: `${i}.jpg`, focal_length_35mm })),
});

describe("cameras before mapping (spec 2.4 camera_model, intrinsics_mode; COLMAP's ImageReader)", () => {
  it("an EXIF 35 mm-equivalent focal length gives f = f35 / 35 x the larger side, as a prior", () => {
    // opensfm-lund: 1024 x 768, FocalLengthIn35mmFormat 35.
    expect(initialCamera("SIMPLE_RADIAL", 1024, 768, 35)).toEqual({
      model: "SIMPLE_RADIAL",
      width: 1024,
      height: 768,
      params: [1024, 512, 384, 0],
      hasPriorFocalLength: true,
    });
    expect(initialCamera("PINHOLE", 768, 1024, 28).params).toEqual([819.2, 819.2, 384, 512]);
  });

  it("without one, f = 1.2 x the larger side and no prior", () => {
    for (const focal of [null, 0, -5]) {
      const c = initialCamera("SIMPLE_RADIAL", 1020, 765, focal);
      expect(c.params[0]).toBe(DEFAULT_FOCAL_LENGTH_FACTOR * 1020);
      expect(c.hasPriorFocalLength).toBe(false);
    }
  });

  it("a shared camera takes the first image's focal length; per-image cameras their own", () => {
    const sizes = [
      { width: 1024, height: 768 },
      { width: 1024, height: 768 },
      { width: 1024, height: 768 },
    ];
    const single = datasetCameras(settings("single_camera", [35, 50, null]), sizes);
    expect(single.cameraOfImage).toEqual([0, 0, 0]);
    expect(single.cameras).toHaveLength(1);
    expect(single.cameras[0]!.params[0]).toBe(1024);
    const perImage = datasetCameras(settings("per_image", [35, 50, null]), sizes);
    expect(perImage.cameras.map((c) => [c.params[0], c.hasPriorFocalLength])).toEqual([
      [1024, true],
      [(1024 * 50) / 35, true],
      [1228.8, false],
    ]);
  });

  it("verification gets a camera's intrinsics only when its focal length is a prior (E as well as F/H)", () => {
    expect(twoViewCamera(initialCamera("SIMPLE_RADIAL", 1024, 768, 35))).toEqual({
      model: "SIMPLE_RADIAL",
      width: 1024,
      height: 768,
      params: [1024, 512, 384, 0],
    });
    expect(twoViewCamera(initialCamera("SIMPLE_RADIAL", 1024, 768))).toEqual({ model: null, width: 1024, height: 768 });
  });

  it("photos of one aspect ratio resized to varied sizes, in either orientation, are one aspect group", () => {
    const sizes = [
      [1024, 768],
      [307, 410], // 4:3 at 0.4 x, turned: 1.3355 by rounding
      [600, 400],
      [1024, 576],
      [449, 300], // 3:2 at 0.75 x: 1.4967
      [800, 600],
      [1000, 600], // 5:3, not 3:2
    ].map(([width, height]) => ({ width: width!, height: height! }));
    const groups = aspectGroups(sizes);
    expect(new Set([0, 1, 5].map((i) => groups[i])).size).toBe(1);
    expect(groups[2]).toBe(groups[4]);
    expect(new Set([groups[0], groups[2], groups[3], groups[6]]).size).toBe(4);
  });
});
