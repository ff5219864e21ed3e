/**
 * @module The `extract` stage (issue 4; spec 2.12 FeaturesSpec, capability
 * `features.extract.sift`): decoded pixels -> 8-bit gray -> SIFT on the CPU engine (wasm)
 * -> a `svc.features.local.v1` artifact. Works in Node and browsers alike; decoding is
 * the caller's (decode/node.ts, or createImageBitmap in a browser).
 *
 * Gray conversion follows COLMAP 3.8, which reads images through FreeImage:
 * round(0.2126 R + 0.7152 G + 0.0722 B) (ITU-R BT.709; measured on libfreeimage 3.18).
 * BT.601 weights are available as `luma: "rec601"`. Images whose larger side exceeds
 * `max_image_size` (3200) are downscaled in the engine and keypoints are reported in the
 * original image's frame (engine-wasm/src/feature/SIFT.md section 1).
 */
import type { Engine } from "../../engine-wasm/ts/engine";
import { DEFAULT_SIFT_OPTIONS, extractSift, type SiftFeatures, type SiftOptions } from "../../engine-wasm/ts/feature";
import { DescriptorKind, encodeFeatures } from "../../protocol/wire/features";

/** Decoded 8-bit pixels, interleaved channels (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA). */
export interface DecodedImage {
  data: Uint8Array | Uint8ClampedArray;
  width: number;
  height: number;
  channels: 1 | 2 | 3 | 4;
}

export type Luma = "rec709" | "rec601";

const LUMA_WEIGHTS: Record<Luma, [number, number, number]> = {
  rec709: [0.2126, 0.7152, 0.0722],
  rec601: [0.299, 0.587, 0.114],
};

/** 8-bit gray from interleaved pixels; alpha is ignored (COLMAP drops it too). */
export function toGray8(image: DecodedImage, luma: Luma = "rec709"): Uint8Array {
  const { data, width, height, channels } = image;
  const n = width * height;
  if (data.length !== n * channels) throw new RangeError(`toGray8: ${data.length} bytes for ${width}x${height}x${channels}`);
  if (channels <= 2) {
    if (channels === 1) return Uint8Array.from(data);
    const gray = new Uint8Array(n);
    for (let i = 0; i < n; i += 1) gray[i] = data[2 * i]!;
    return gray;
  }
  const [wr, wg, wb] = LUMA_WEIGHTS[luma];
  // Math.fround keeps the arithmetic in float32, as FreeImage's LUMA_REC709 macro is.
  const fr = Math.fround(wr),
    fg = Math.fround(wg),
    fb = Math.fround(wb);
  const gray = new Uint8Array(n);
  for (let i = 0, p = 0; i < n; i += 1, p += channels) {
    const y = Math.fround(Math.fround(Math.fround(fr * data[p]!) + Math.fround(fg * data[p + 1]!)) + Math.fround(fb * data[p + 2]!));
    gray[i] = Math.min(255, Math.floor(y + 0.5));
  }
  return gray;
}

/** The FeaturesSpec fields this stage reads (spec 2.12), with the legacy SIFT aliases. */
export interface FeaturesSpecLike {
  type?: string;
  max_num_features?: number;
  sift_max_num_features?: number;
  sift_first_octave?: number;
  seed?: number;
  backend_options?: Record<string, unknown>;
}

/**
 * SIFT options from a FeaturesSpec: `max_num_features` (or its alias), `sift_first_octave`,
 * and COLMAP-named overrides in `backend_options` (`first_octave`, `max_image_size`, `peak_threshold`,
 * `edge_threshold`, `num_octaves`, `octave_resolution`, `max_num_orientations`, `upright`,
 * `normalization`: "L1_ROOT" | "L2"). `seed` is accepted; SIFT is deterministic without it.
 */
export function siftOptionsFromSpec(spec: FeaturesSpecLike = {}): SiftOptions {
  if (spec.type !== undefined && spec.type !== "sift") throw new RangeError(`extract: feature type ${spec.type} is not supported here`);
  const o: SiftOptions = { ...DEFAULT_SIFT_OPTIONS };
  const max = spec.max_num_features ?? spec.sift_max_num_features;
  if (max !== undefined) o.maxNumFeatures = max;
  if (spec.sift_first_octave !== undefined) o.firstOctave = spec.sift_first_octave;
  const b = spec.backend_options ?? {};
  const num = (key: string): number | undefined => (typeof b[key] === "number" ? (b[key] as number) : undefined);
  // `sift_first_octave` is folded into `backend_options.first_octave` by the FeaturesSpec schema.
  o.firstOctave = num("first_octave") ?? o.firstOctave;
  o.maxImageSize = num("max_image_size") ?? o.maxImageSize;
  o.numOctaves = num("num_octaves") ?? o.numOctaves;
  o.octaveResolution = num("octave_resolution") ?? o.octaveResolution;
  o.peakThreshold = num("peak_threshold") ?? (num("octave_resolution") ? 0.02 / o.octaveResolution : o.peakThreshold);
  o.edgeThreshold = num("edge_threshold") ?? o.edgeThreshold;
  o.maxNumOrientations = num("max_num_orientations") ?? o.maxNumOrientations;
  if (typeof b.upright === "boolean") o.upright = b.upright;
  if (b.normalization === "L2" || b.normalization === "l2") o.normalization = "l2";
  return o;
}

/**
 * The wasm memory an engine reaches running SIFT on a `width` x `height` image, measured: about 50
 * bytes per pixel of the first octave (after the downscale to `maxImageSize`; first octave -1
 * doubles each side) plus the engine's own 16 MiB, so 1.2 GB for a 6 MP photo at the defaults. An
 * image of unknown size counts as the largest the options allow (4:3).
 */
export function siftPeakBytes(width: number | null, height: number | null, options: SiftOptions): number {
  const [w, h] = width && height ? [width, height] : [options.maxImageSize, (options.maxImageSize * 3) / 4];
  const scale = Math.min(1, options.maxImageSize / Math.max(w, h));
  return 50 * (w * scale) * (h * scale) * 4 ** -options.firstOctave + 16 * 1024 ** 2;
}

export interface ExtractResult {
  /** The `svc.features.local.v1` artifact. */
  bytes: Uint8Array;
  features: SiftFeatures;
  width: number;
  height: number;
}

export interface ExtractStageOptions {
  spec?: FeaturesSpecLike;
  luma?: Luma;
}

/** Runs the whole stage on one decoded image. */
export function extractFeatures(engine: Engine, image: DecodedImage, options: ExtractStageOptions = {}): ExtractResult {
  const sift = siftOptionsFromSpec(options.spec);
  const gray = toGray8(image, options.luma);
  return siftArtifact(image, sift, extractSift(engine, gray, image.width, image.height, sift));
}

/** The `svc.features.local.v1` artifact of SIFT features computed on `image` with `sift` options. */
export function siftArtifact(image: { width: number; height: number }, sift: SiftOptions, features: SiftFeatures): ExtractResult {
  const bytes = encodeFeatures({
    imageWidth: image.width,
    imageHeight: image.height,
    descriptorDim: 128,
    descriptorKind: sift.normalization === "l2" ? DescriptorKind.siftL2 : DescriptorKind.siftL1Root,
    keypoints: features.keypoints,
    descriptors: features.descriptors,
  });
  return { bytes, features, width: image.width, height: image.height };
}
