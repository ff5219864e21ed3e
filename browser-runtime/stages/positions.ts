/**
 * @module Where the dataset says its images were taken (spec 4.12): pose priors (camera centre and
 * viewing direction in the priors' frame) and GPS (a pose prior's `gps`, else EXIF GPS) in a local
 * East-North-Up frame in metres. Read by spatial and from-poses pairs, georegister's `x-from_gps`
 * and the mapper's prior constraints, so all of them place an image alike.
 */
import type { DatasetSnapshot } from "../../protocol";
import type { MappingPosePrior } from "../../engine-wasm/ts/mapping";
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

/** Without a covariance, a pose prior's standard deviations (the PosePrior description, 2.13): 0.1 rad and 1 world unit. */
const PRIOR_ROTATION_SIGMA = 0.1;
const PRIOR_CENTRE_SIGMA = 1;
/** A GPS position's: its horizontal accuracy, else 5 m (a phone's); up three times that (EXIF altitudes are worse). */
const GPS_HORIZONTAL_SIGMA = 5;
const GPS_VERTICAL_FACTOR = 3;
/** A variance so large its direction is free (a GPS position says nothing of the orientation, nor of the height without an altitude). */
export const FREE_VARIANCE = 1e12;
/** Three images placed, not all on one line, determine the similarity the mapper aligns the model by. */
const MIN_MAPPING_PRIORS = 3;

const diagonal = (d: number[]) => Array.from({ length: 36 }, (_, k) => (k % 7 === 0 ? d[k / 7]! : 0));

/** The priors the mapper constrains its models by, and the frame they come out in. */
export interface MappingPriors {
  /** pose_priors: the priors' own frame; gps_enu: metres east, north and up of `enu_origin`. */
  frame: "pose_priors" | "gps_enu";
  enu_origin: Geodetic | null;
  priors: MappingPosePrior[];
}

/**
 * The images' pose priors as the mapper takes them (4.12: soft constraints in bundle adjustment,
 * weighted by their covariance): the pose priors when at least three images have one, else GPS
 * positions in the local ENU frame when three have one; null otherwise (the model keeps its own frame).
 */
export function mappingPriors(images: readonly DatasetImage[]): MappingPriors | null {
  const poses = images.flatMap((im, image) => (im.pose_prior ? [{ image, prior: im.pose_prior }] : []));
  if (poses.length >= MIN_MAPPING_PRIORS) {
    return {
      frame: "pose_priors",
      enu_origin: null,
      priors: poses.map(({ image, prior }) => {
        const r = prior.cam_from_world.rotation;
        return {
          image,
          qvec: [r.w, r.x, r.y, r.z],
          centre: centreOf(prior.cam_from_world),
          covariance:
            prior.covariance ?? diagonal([...Array(3).fill(PRIOR_ROTATION_SIGMA ** 2), ...Array(3).fill(PRIOR_CENTRE_SIGMA ** 2)]),
        };
      }),
    };
  }
  const enu = enuPositions(images);
  const located = images.flatMap((im, image) =>
    enu?.positions[image] ? [{ image, gps: gpsOf(im)!, position: enu.positions[image]! }] : [],
  );
  if (!enu || located.length < MIN_MAPPING_PRIORS) return null;
  return {
    frame: "gps_enu",
    enu_origin: enu.origin,
    priors: located.map(({ image, gps, position }) => {
      const horizontal = (gps.horizontal_accuracy_m ?? GPS_HORIZONTAL_SIGMA) ** 2;
      const vertical = gps.altitude === null ? FREE_VARIANCE : GPS_VERTICAL_FACTOR ** 2 * horizontal;
      return {
        image,
        qvec: [1, 0, 0, 0],
        centre: position,
        covariance: diagonal([FREE_VARIANCE, FREE_VARIANCE, FREE_VARIANCE, horizontal, horizontal, vertical]),
      };
    }),
  };
}
