/**
 * @module WGS84 positions in a local East-North-Up frame (metres), for aligning a model to GPS:
 * geodetic -> ECEF (earth-centred, earth-fixed) -> ENU at an origin. Exact formulas, no
 * flat-earth approximation, so the frame holds over kilometres.
 */
import type { Vec3 } from "../../engine-wasm/ts/accuracy";

/** WGS84 semi-major axis (m) and first eccentricity squared. */
const A = 6378137;
const E2 = 6.69437999014e-3;

export interface Geodetic {
  latitude: number;
  longitude: number;
  /** Metres above the ellipsoid (EXIF gives metres above sea level: the difference is a constant shift here). */
  altitude: number;
}

const rad = (deg: number) => (deg * Math.PI) / 180;

export function ecefOf(g: Geodetic): Vec3 {
  const [lat, lon] = [rad(g.latitude), rad(g.longitude)];
  const n = A / Math.sqrt(1 - E2 * Math.sin(lat) ** 2);
  return [
    (n + g.altitude) * Math.cos(lat) * Math.cos(lon),
    (n + g.altitude) * Math.cos(lat) * Math.sin(lon),
    (n * (1 - E2) + g.altitude) * Math.sin(lat),
  ];
}

/** Metres east, north and up of `origin`. */
export function enuOf(g: Geodetic, origin: Geodetic): Vec3 {
  const p = ecefOf(g);
  const o = ecefOf(origin);
  const d = [p[0] - o[0], p[1] - o[1], p[2] - o[2]] as const;
  const [lat, lon] = [rad(origin.latitude), rad(origin.longitude)];
  const [sl, cl, so, co] = [Math.sin(lat), Math.cos(lat), Math.sin(lon), Math.cos(lon)];
  return [-so * d[0] + co * d[1], -sl * co * d[0] - sl * so * d[1] + cl * d[2], cl * co * d[0] + cl * so * d[1] + sl * d[2]];
}
