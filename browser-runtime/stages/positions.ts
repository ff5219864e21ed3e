/**
 * @module Where the dataset says its images were taken (spec 4.12): pose priors (camera centre and
 * viewing direction in the priors' frame) and GPS (a pose prior's `gps`, else EXIF GPS) in a local
 * East-North-Up frame in metres. Read by spatial and from-poses pairs, georegister's `x-from_gps`
 * and the mapper's prior constraints, so all of them place an image alike.
 */
import type { DatasetSnapshot } from "../../protocol";
import { type Vec3, quatConj, rotate } from "../../engine-wasm/ts/accuracy";
import { type Geodetic, enuOf } from "./enu";
import { centreOf } from "./sim3";

type DatasetImage = DatasetSnapshot["images"][number];

/** A pose prior as pairs read it: the camera centre and its principal axis (the camera's +z) in the priors' frame. */
export interface PriorPose {
  centre: Vec3;
  axis: Vec3;
}

/** The prior of each image that has one (null for the others), in `images` order. */
export function priorPoses(images: readonly DatasetImage[]): (PriorPose | null)[] {
  return images.map((im) => {
    const pose = im.pose_prior?.cam_from_world;
    if (!pose) return null;
    const r = pose.rotation;
    return { centre: centreOf(pose), axis: rotate(quatConj([r.w, r.x, r.y, r.z]), [0, 0, 1]) };
  });
}

/** The GPS position an image has: its pose prior's, else its EXIF one. */
export const gpsOf = (im: DatasetImage) => im.pose_prior?.gps ?? im.gps ?? null;

export interface EnuPositions {
  /** The frame's origin: the mean of the images' GPS positions (altitude: of those that have one, else 0). */
  origin: Geodetic;
  /** Metres east, north and up of `origin` per image (null without GPS), in `images` order; a missing altitude is the origin's. */
  positions: (Vec3 | null)[];
}

/** The images' GPS positions in a local ENU frame; null when no image has GPS. */
export function enuPositions(images: readonly DatasetImage[]): EnuPositions | null {
  const located = images.map(gpsOf).filter((g) => g !== null);
  if (located.length === 0) return null;
  const withAltitude = located.filter((g) => g.altitude !== null);
  const origin: Geodetic = {
    latitude: located.reduce((a, g) => a + g.latitude, 0) / located.length,
    longitude: located.reduce((a, g) => a + g.longitude, 0) / located.length,
    altitude: withAltitude.length > 0 ? withAltitude.reduce((a, g) => a + g.altitude!, 0) / withAltitude.length : 0,
  };
  const positions = images.map((im) => {
    const g = gpsOf(im);
    return g ? enuOf({ latitude: g.latitude, longitude: g.longitude, altitude: g.altitude ?? origin.altitude }, origin) : null;
  });
  return { origin, positions };
}
