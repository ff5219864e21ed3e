/**
 * @module SIFT extraction and descriptor matching through the wasm engine
 * (src/bindings/feature.cc; the algorithm is specified in src/feature/SIFT.md).
 * Defaults are COLMAP 3.8's SiftExtractionOptions / SiftMatchingOptions.
 */
import type { Engine } from "./engine";
import { heapAddress } from "./heap";

/** COLMAP's SIFT extraction options (src/feature/sift_options.h). */
export interface SiftOptions {
  /** Larger images are downscaled so their larger side is this (keypoints reported in the original frame). */
  maxImageSize: number;
  /** Budget: whole DoG levels, coarsest first, until the count first exceeds it (SIFT.md section 7). */
  maxNumFeatures: number;
  /** -1 upsamples the image 2x first. */
  firstOctave: number;
  numOctaves: number;
  octaveResolution: number;
  /** On intensities in [0, 1]; COLMAP: 0.02 / octaveResolution. */
  peakThreshold: number;
  edgeThreshold: number;
  maxNumOrientations: number;
  upright: boolean;
  /** `l1_root` (RootSIFT, COLMAP's default) or `l2`. */
  normalization: "l1_root" | "l2";
}

export const DEFAULT_SIFT_OPTIONS: Readonly<SiftOptions> = Object.freeze({
  maxImageSize: 3200,
  maxNumFeatures: 8192,
  firstOctave: -1,
  numOctaves: 4,
  octaveResolution: 3,
  peakThreshold: 0.02 / 3,
  edgeThreshold: 10,
  maxNumOrientations: 2,
  upright: false,
  normalization: "l1_root",
});

export interface SiftFeatures {
  /** x, y, scale, orientation per keypoint; COLMAP convention (top-left pixel centre at 0.5, 0.5). */
  keypoints: Float32Array;
  /** 128 bytes per keypoint, COLMAP's (UBC) bin order. */
  descriptors: Uint8Array;
}

/** COLMAP's SiftMatchingOptions. */
export interface MatchOptions {
  maxRatio: number;
  /** Radians: acos of the descriptors' normalised dot product. */
  maxDistance: number;
  crossCheck: boolean;
}

export const DEFAULT_MATCH_OPTIONS: Readonly<MatchOptions> = Object.freeze({
  maxRatio: 0.8,
  maxDistance: 0.7,
  crossCheck: true,
});

function optionArray(o: SiftOptions): number[] {
  return [
    o.maxImageSize,
    o.maxNumFeatures,
    o.firstOctave,
    o.numOctaves,
    o.octaveResolution,
    o.peakThreshold,
    o.edgeThreshold,
    o.maxNumOrientations,
    o.upright ? 1 : 0,
    o.normalization === "l2" ? 0 : 1,
  ];
}

/**
 * SIFT on a gray image: a Float32Array holds intensities in [0, 1]; a Uint8Array holds
 * 8-bit gray (resized in 8 bits when above maxImageSize, as COLMAP does).
 */
export function extractSift(
  engine: Engine,
  gray: Float32Array | Uint8Array,
  width: number,
  height: number,
  options: Partial<SiftOptions> = {},
): SiftFeatures {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width <= 0 || height <= 0) {
    throw new RangeError(`extractSift: invalid size ${width}x${height}`);
  }
  if (gray.length !== width * height) {
    throw new RangeError(`extractSift: ${gray.length} pixels for ${width}x${height}`);
  }
  const merged: SiftOptions = { ...DEFAULT_SIFT_OPTIONS, ...options };
  const m = engine.module;
  return engine.withHeap((heap) => {
    const opts = heap.f64(optionArray(merged));
    const pixels = heap.alloc(gray.byteLength);
    let handle: number;
    if (gray instanceof Float32Array) {
      m.HEAPF32.set(gray, pixels / 4);
      handle = engine.call("edgesfm_feature_sift_extract_f32", pixels, width, height, opts);
    } else {
      m.HEAPU8.set(gray, pixels);
      handle = engine.call("edgesfm_feature_sift_extract_u8", pixels, width, height, opts);
    }
    try {
      if (engine.call("edgesfm_feature_sift_result_ok", handle) !== 1) {
        throw new RangeError("extractSift: invalid options");
      }
      const count = engine.call("edgesfm_feature_sift_result_count", handle);
      const kp = heapAddress(engine.call("edgesfm_feature_sift_result_keypoints", handle)) / 4;
      const desc = heapAddress(engine.call("edgesfm_feature_sift_result_descriptors", handle));
      // Re-read the views: memory may have grown during extraction.
      return {
        keypoints: engine.module.HEAPF32.slice(kp, kp + count * 4),
        descriptors: engine.module.HEAPU8.slice(desc, desc + count * 128),
      };
    } finally {
      engine.call("edgesfm_feature_sift_result_free", handle);
    }
  });
}

/**
 * Brute-force nearest neighbours with COLMAP's ratio, distance and cross-check rules.
 * Returns index pairs i0 j0 i1 j1 ... (ascending i).
 */
export function matchDescriptors(engine: Engine, descA: Uint8Array, descB: Uint8Array, options: Partial<MatchOptions> = {}): Uint32Array {
  if (descA.length % 128 !== 0 || descB.length % 128 !== 0) {
    throw new RangeError("matchDescriptors: descriptor arrays must hold 128 bytes per descriptor");
  }
  const o: MatchOptions = { ...DEFAULT_MATCH_OPTIONS, ...options };
  const m = engine.module;
  return engine.withHeap((heap) => {
    const a = heap.alloc(descA.length);
    const b = heap.alloc(descB.length);
    m.HEAPU8.set(descA, a);
    m.HEAPU8.set(descB, b);
    const handle = engine.call(
      "edgesfm_feature_match",
      a,
      descA.length / 128,
      b,
      descB.length / 128,
      o.maxRatio,
      o.maxDistance,
      o.crossCheck ? 1 : 0,
    );
    try {
      const count = engine.call("edgesfm_feature_match_result_count", handle);
      const pairs = heapAddress(engine.call("edgesfm_feature_match_result_pairs", handle)) / 4;
      return engine.module.HEAPU32.slice(pairs, pairs + count * 2);
    } finally {
      engine.call("edgesfm_feature_match_result_free", handle);
    }
  });
}
