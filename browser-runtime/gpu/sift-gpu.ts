/**
 * @module SIFT on WebGPU: the WGSL twin of engine-wasm's CPU SIFT. Both implement
 * engine-wasm/src/feature/SIFT.md (VLFeat's sift.c as configured by COLMAP 3.8); this file
 * drives the kernels in shaders/ one octave at a time and assembles the features on the host
 * (order, feature budget, coordinates), with the same rules as the CPU path.
 */

/// <reference types="@webgpu/types" />

import { DEFAULT_SIFT_OPTIONS, type SiftFeatures, type SiftOptions } from "../../engine-wasm/ts/feature";
import { BufferPool, readBuffers, withErrorScopes } from "./buffers";
import { prepareIntensity } from "./preprocess";
import type { ShaderSources } from "./shader-sources";

/** A gray image with intensities in [0, 1] (SIFT.md section 1.3), row-major. */
export interface GrayImage {
  width: number;
  height: number;
  data: Float32Array;
}

/** Refined keypoints of one octave in VLFeat order, before orientation duplication. */
interface OctaveKeypoints {
  octave: number;
  x: Float32Array;
  y: Float32Array;
  sigma: Float32Array;
  level: Uint32Array;
  /** Orientation slots per keypoint: keypoint k's angles and descriptors are at slots*k .. slots*k + numAngles[k] - 1. */
  slots: number;
  numAngles: Uint32Array;
  angles: Float32Array;
  descriptors: Uint8Array;
}

const KEYPOINT_WORDS = 8; // struct Keypoint in sift_common.wgsl
/** sort_key = level << 28 | row << 14 | column (sift_detect.wgsl). */
const MAX_OCTAVE_SIDE = (1 << 14) - 1;
/** VLFeat finds at most 4 orientations per keypoint; COLMAP keeps the first max_num_orientations. */
const MAX_ORIENTATIONS = 4;
const MAX_RADIUS = 32; // gaussian_blur.wgsl MAX_RADIUS

const ceilDiv = (a: number, b: number) => Math.ceil(a / b);

/** VLFeat's Gaussian taps for `sigma`, computed in float32 as _vl_sift_smooth does. */
export function gaussianTaps(sigma: number): Float32Array {
  const radius = Math.max(Math.ceil(4 * sigma), 1);
  const taps = new Float32Array(2 * radius + 1);
  const f = Math.fround;
  let acc = 0;
  for (let j = 0; j < taps.length; j++) {
    const d = f(f(j - radius) / f(sigma));
    taps[j] = f(Math.exp(-0.5 * f(d * d)));
    acc = f(acc + taps[j]!);
  }
  for (let j = 0; j < taps.length; j++) taps[j] = f(taps[j]! / acc);
  return taps;
}

/** Octave size: `w << -o` for o < 0, `w >> o` otherwise (VL_SHIFT_LEFT). */
const octaveSize = (n: number, o: number) => (o < 0 ? n << -o : n >> o);

/**
 * Bytes of the largest buffer binding for a (resized) image: the S + 3 Gaussian planes (f32) of
 * the first octave, 24 bytes per pixel at S = 3: 740 MB for a 3200x2400 image at first_octave -1.
 * With the two single-plane temporaries that is all the image memory (DoG values and gradients
 * are recomputed from these planes by the kernels).
 */
function largestBinding(width: number, height: number, opt: Pick<SiftOptions, "firstOctave" | "octaveResolution">): number {
  return 4 * octaveSize(width, opt.firstOctave) * octaveSize(height, opt.firstOctave) * (opt.octaveResolution + 3);
}

/** Compiled SIFT kernels for one device; reusable across images. */
export class SiftGpu {
  private readonly pipelines = new Map<string, GPUComputePipeline>();

  /**
   * `tiledBlur`: workgroup-shared tiles (right for GPUs); false selects the direct kernels,
   * several times faster on software adapters, same arithmetic.
   */
  constructor(
    readonly device: GPUDevice,
    private readonly sources: ShaderSources,
    private readonly tiledBlur = true,
  ) {}

  /**
   * Compiles every kernel up front (asynchronously, rejecting on WGSL errors) so the first
   * extraction does not pay for it; optional, pipelines are otherwise created on first use.
   */
  async prepare(): Promise<void> {
    const suffix = this.tiledBlur ? "" : "_direct";
    const entries: [keyof ShaderSources, string][] = [
      ["gaussian_blur", `blur_vertical${suffix}`],
      ["gaussian_blur", `blur_horizontal${suffix}`],
      ["resample", "upsample_2x"],
      ["resample", "downsample_2x"],
      ["sift_detect", "detect_extrema"],
      ["bitonic_sort", "bitonic_step"],
      ["sift_orientation", "orientations"],
      ["sift_descriptor", "descriptors_main"],
    ];
    await Promise.all(
      entries.map(async ([module, entryPoint]) => {
        const key = `${module}:${entryPoint}`;
        if (!this.pipelines.has(key))
          this.pipelines.set(key, await this.device.createComputePipelineAsync(this.pipelineDescriptor(module, entryPoint)));
      }),
    );
  }

  private pipelineDescriptor(module: keyof ShaderSources, entryPoint: string): GPUComputePipelineDescriptor {
    const label = `${module}:${entryPoint}`;
    return {
      label,
      layout: "auto",
      compute: { module: this.device.createShaderModule({ label: module, code: this.sources[module] }), entryPoint },
    };
  }

  private pipeline(module: keyof ShaderSources, entryPoint: string): GPUComputePipeline {
    const key = `${module}:${entryPoint}`;
    let p = this.pipelines.get(key);
    if (!p) {
      p = this.device.createComputePipeline(this.pipelineDescriptor(module, entryPoint));
      this.pipelines.set(key, p);
    }
    return p;
  }

  /**
   * One dispatch; `buffers[i]` is bound at binding i. Layouts are "auto", which only holds the
   * bindings an entry point uses, so unused positions are passed as undefined.
   */
  private dispatch(
    pass: GPUComputePassEncoder,
    module: keyof ShaderSources,
    entryPoint: string,
    buffers: (GPUBuffer | undefined)[],
    groups: [number, number?, number?],
  ): void {
    const pipeline = this.pipeline(module, entryPoint);
    const entries: GPUBindGroupEntry[] = [];
    buffers.forEach((buffer, binding) => {
      if (buffer) entries.push({ binding, resource: { buffer } });
    });
    const bindGroup = this.device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(groups[0], groups[1] ?? 1, groups[2] ?? 1);
  }

  /** Blurs the plane at element `srcOffset` of `src` into the plane at `dstOffset` of `dst`, through `temp`. */
  private blur(
    pool: BufferPool,
    pass: GPUComputePassEncoder,
    src: GPUBuffer,
    srcOffset: number,
    dst: GPUBuffer,
    dstOffset: number,
    temp: GPUBuffer,
    w: number,
    h: number,
    sigma: number,
  ): void {
    const taps = gaussianTaps(sigma);
    const radius = (taps.length - 1) / 2;
    if (radius > MAX_RADIUS) throw new Error(`SIFT blur radius ${radius} exceeds the kernel's ${MAX_RADIUS}`);
    const weights = pool.storageFrom(taps);
    const groups: [number, number] = this.tiledBlur ? [ceilDiv(w, 16), ceilDiv(h, 16)] : [ceilDiv(w, 64), h];
    const suffix = this.tiledBlur ? "" : "_direct";
    this.dispatch(
      pass,
      "gaussian_blur",
      `blur_vertical${suffix}`,
      [pool.uniform([w, h, radius, srcOffset, 0]), weights, src, temp],
      groups,
    );
    this.dispatch(
      pass,
      "gaussian_blur",
      `blur_horizontal${suffix}`,
      [pool.uniform([w, h, radius, 0, dstOffset]), weights, temp, dst],
      groups,
    );
  }

  /** Whether an image of this size (after the maxImageSize budget) fits this device's buffer limits. */
  fits(width: number, height: number, options: Partial<SiftOptions> = {}): boolean {
    const opt = { ...DEFAULT_SIFT_OPTIONS, ...options };
    const scale = Math.min(1, opt.maxImageSize / Math.max(width, height));
    const [w, h] = [Math.max(1, Math.trunc(width * scale)), Math.max(1, Math.trunc(height * scale))];
    // The detection sort key packs a first-octave row and column into 14 bits each.
    if (octaveSize(w, opt.firstOctave) > MAX_OCTAVE_SIDE || octaveSize(h, opt.firstOctave) > MAX_OCTAVE_SIDE) return false;
    const { maxStorageBufferBindingSize, maxBufferSize } = this.device.limits;
    return largestBinding(w, h, opt) <= Math.min(maxStorageBufferBindingSize, maxBufferSize);
  }

  /** Runs SIFT.md sections 2-7 on a gray image in [0, 1]. */
  async extract(image: GrayImage, options: Partial<SiftOptions> = {}, sx = 1, sy = 1): Promise<SiftFeatures> {
    const opt = { ...DEFAULT_SIFT_OPTIONS, ...options };
    if (!this.fits(image.width, image.height, opt)) {
      throw new RangeError(
        `SiftGpu: a ${image.width}x${image.height} image does not fit: octave ${opt.firstOctave} needs a ${largestBinding(image.width, image.height, opt)}-byte binding (device: ${this.device.limits.maxStorageBufferBindingSize}) and sides <= ${MAX_OCTAVE_SIDE}; use the WASM path or a smaller maxImageSize`,
      );
    }
    const pool = new BufferPool(this.device);
    try {
      const octaves = await withErrorScopes(this.device, "SiftGpu", () => this.octaves(pool, image, opt));
      return assembleFeatures(octaves, opt, sx, sy);
    } finally {
      pool.destroy();
    }
  }

  /** The scale space octave by octave (SIFT.md section 2), each detected and described in turn. */
  private async octaves(pool: BufferPool, image: GrayImage, opt: SiftOptions): Promise<OctaveKeypoints[]> {
    const { device } = this;
    const S = opt.octaveResolution;
    const k = 2 ** (1 / S);
    const sigma0 = 1.6 * k;
    const dsigma0 = sigma0 * Math.sqrt(1 - 1 / (k * k));
    const oMin = opt.firstOctave;
    const plane0 = octaveSize(image.width, oMin) * octaveSize(image.height, oMin);
    const gauss = pool.storage(4 * plane0 * (S + 3), "gaussian levels");
    const temp = pool.storage(4 * plane0, "blur temp");
    const temp2 = pool.storage(4 * plane0, "resample temp");
    const input = pool.storageFrom(image.data, "input");
    // Each octave's results are read back while the GPU already computes the next octave (its
    // buffers are the octave's own; only `gauss` is reused, and the queue orders those uses).
    const octaves: Promise<OctaveKeypoints | undefined>[] = [];
    for (let o = oMin; o < oMin + opt.numOctaves; o++) {
      const w = octaveSize(image.width, o);
      const h = octaveSize(image.height, o);
      if (Math.min(w, h) < 3) break; // SIFT.md 2: no extremum can exist; stop here
      const plane = w * h;
      const encoder = device.createCommandEncoder();
      if (o === oMin) {
        this.encodeFirstLevel(pool, encoder, input, image.width, image.height, oMin, gauss, temp2);
        const sa = sigma0 * k ** -1;
        const sb = 0.5 * 2 ** -oMin;
        if (sa > sb) {
          const pass = encoder.beginComputePass();
          this.blur(pool, pass, gauss, 0, gauss, 0, temp, w, h, Math.sqrt(sa * sa - sb * sb));
          pass.end();
        }
      } else {
        // Level -1 = level S - 1 (Gaussian plane S) of the previous octave, subsampled.
        const pw = octaveSize(image.width, o - 1);
        const ph = octaveSize(image.height, o - 1);
        const pass = encoder.beginComputePass();
        this.dispatch(
          pass,
          "resample",
          "downsample_2x",
          [pool.uniform([pw, ph, w, h, S * pw * ph, 0]), gauss, temp2],
          [ceilDiv(w, 16), ceilDiv(h, 16)],
        );
        pass.end();
        encoder.copyBufferToBuffer(temp2, 0, gauss, 0, 4 * plane);
      }
      const pass = encoder.beginComputePass();
      for (let s = 0; s <= S + 1; s++) {
        this.blur(pool, pass, gauss, s * plane, gauss, (s + 1) * plane, temp, w, h, dsigma0 * k ** s);
      }
      pass.end();
      device.queue.submit([encoder.finish()]);
      const { results } = await this.detectAndDescribe(pool, { o, w, h, S, sigma0, opt, gauss });
      results.catch(() => {}); // rejections surface through Promise.all below
      octaves.push(results);
    }
    return (await Promise.all(octaves)).filter((octave) => octave !== undefined);
  }

  /** Level -1 of the first octave: the input up- or down-sampled to octave o_min. */
  private encodeFirstLevel(
    pool: BufferPool,
    encoder: GPUCommandEncoder,
    input: GPUBuffer,
    width: number,
    height: number,
    oMin: number,
    gauss: GPUBuffer,
    temp2: GPUBuffer,
  ): void {
    if (oMin === 0) {
      encoder.copyBufferToBuffer(input, 0, gauss, 0, 4 * width * height);
      return;
    }
    // Repeated 2x steps; ping-pong between temp2 and the plane-0 region of `gauss`.
    const pass = encoder.beginComputePass();
    let src = input;
    let w = width;
    let h = height;
    const steps = Math.abs(oMin);
    for (let i = 0; i < steps; i++) {
      const dst = (steps - i) % 2 === 1 ? gauss : temp2;
      const [nw, nh] = oMin < 0 ? [2 * w, 2 * h] : [w >> 1, h >> 1];
      const entry = oMin < 0 ? "upsample_2x" : "downsample_2x";
      this.dispatch(pass, "resample", entry, [pool.uniform([w, h, nw, nh, 0, 0]), src, dst], [ceilDiv(nw, 16), ceilDiv(nh, 16)]);
      src = dst;
      w = nw;
      h = nh;
    }
    pass.end();
  }

  /**
   * Extrema, refinement, sort, orientations and descriptors of the octave in `gauss`. Resolves
   * once the work is queued (after reading the keypoint count, which sizes the rest); `results`
   * resolves when the octave's outputs are read back.
   */
  private async detectAndDescribe(
    pool: BufferPool,
    c: {
      o: number;
      w: number;
      h: number;
      S: number;
      sigma0: number;
      opt: SiftOptions;
      gauss: GPUBuffer;
    },
  ): Promise<{ results: Promise<OctaveKeypoints | undefined> }> {
    const { device } = this;
    const { w, h, S, opt } = c;
    let capacity = Math.max(1024, Math.ceil((w * h) / 64));
    let count = 0;
    let keypoints: GPUBuffer;
    let order: GPUBuffer;
    const counter = pool.storage(16, "keypoint counter");
    for (;;) {
      keypoints = pool.storage(4 * KEYPOINT_WORDS * capacity, "keypoints");
      order = pool.storageFrom(new Uint32Array(2 * nextPow2(capacity)).fill(0xffffffff), "sort pairs");
      device.queue.writeBuffer(counter, 0, new Uint32Array(4));
      const encoder = device.createCommandEncoder();
      const pass = encoder.beginComputePass();
      const params = pool.uniform([w, h, capacity, S, opt.peakThreshold, opt.edgeThreshold, c.sigma0, 0], [4, 5, 6]);
      this.dispatch(
        pass,
        "sift_detect",
        "detect_extrema",
        [params, c.gauss, undefined, keypoints, counter, order],
        [ceilDiv(w - 2, 16), ceilDiv(h - 2, 16), S],
      );
      pass.end();
      device.queue.submit([encoder.finish()]);
      const [counts] = await readBuffers(device, [{ buffer: counter, bytes: 4 }]);
      count = new Uint32Array(counts!)[0]!;
      if (count <= capacity) break;
      capacity = count; // too many for the buffer: rerun with room for all (keeps the order exact)
    }
    if (count === 0) return { results: Promise.resolve(undefined) };

    // Sort the (detection key, slot) pairs into VLFeat's scan order; entries past `count` hold
    // 0xffffffff and stay at the end.
    const padded = nextPow2(count);
    const slots = opt.upright ? 1 : Math.min(opt.maxNumOrientations, MAX_ORIENTATIONS);
    const angles = pool.storage(4 * slots * count, "angles");
    const numAngles = pool.storage(4 * count, "orientation counts");
    const descriptors = pool.storage(128 * slots * count, "descriptors");
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    const sortGroups = ceilDiv(padded / 2, 256);
    for (let block = 2; block <= padded; block *= 2) {
      for (let stride = block / 2; stride >= 1; stride /= 2) {
        this.dispatch(pass, "bitonic_sort", "bitonic_step", [pool.uniform([block, stride, padded]), order], grid(sortGroups));
      }
    }
    const orientParams = pool.uniform([w, h, S, count, slots, opt.upright ? 1 : 0]);
    this.dispatch(
      pass,
      "sift_orientation",
      "orientations",
      [orientParams, c.gauss, undefined, keypoints, order, angles, numAngles],
      grid(ceilDiv(count, 64)),
    );
    const descParams = pool.uniform([w, h, count, opt.normalization === "l2" ? 0 : 1, slots]);
    this.dispatch(
      pass,
      "sift_descriptor",
      "descriptors_main",
      [descParams, c.gauss, keypoints, order, angles, numAngles, descriptors],
      grid(ceilDiv(slots * count, 4)),
    );
    pass.end();
    device.queue.submit([encoder.finish()]);
    const readBack = readBuffers(device, [
      { buffer: keypoints, bytes: 4 * KEYPOINT_WORDS * count },
      { buffer: order, bytes: 8 * count },
      { buffer: angles, bytes: 4 * slots * count },
      { buffer: numAngles, bytes: 4 * count },
      { buffer: descriptors, bytes: 128 * slots * count },
    ]);
    const results = readBack.then(([kpBytes, orderBytes, angleBytes, numBytes, descBytes]) => {
      const kpU32 = new Uint32Array(kpBytes!);
      const kpF32 = new Float32Array(kpBytes!);
      const sorted = new Uint32Array(orderBytes!);
      const out: OctaveKeypoints = {
        octave: c.o,
        slots,
        x: new Float32Array(count),
        y: new Float32Array(count),
        sigma: new Float32Array(count),
        level: new Uint32Array(count),
        numAngles: new Uint32Array(numBytes!),
        angles: new Float32Array(angleBytes!),
        descriptors: new Uint8Array(descBytes!),
      };
      for (let i = 0; i < count; i++) {
        const j = sorted[2 * i + 1]! * KEYPOINT_WORDS;
        out.x[i] = kpF32[j]!;
        out.y[i] = kpF32[j + 1]!;
        out.sigma[i] = kpF32[j + 2]!;
        out.level[i] = kpU32[j + 6]!;
      }
      return out;
    });
    return { results };
  }
}

const nextPow2 = (n: number) => 2 ** Math.ceil(Math.log2(Math.max(2, n)));

/** Workgroup grid for a 1-D count of groups, folded into y above the 65535 per-dimension limit. */
function grid(groups: number): [number, number] {
  if (groups <= 65535) return [Math.max(1, groups), 1];
  const y = Math.ceil(groups / 65535);
  return [Math.ceil(groups / y), y];
}

/**
 * SIFT.md section 7: VLFeat order, COLMAP's whole-level feature budget, and coordinates in the
 * input frame (`(x 2^o + 0.5) sx`); `sx`, `sy` undo a budget resize.
 */
export function assembleFeatures(
  octaves: OctaveKeypoints[],
  opt: Pick<SiftOptions, "maxNumFeatures">,
  sx: number,
  sy: number,
): SiftFeatures {
  // Level groups: consecutive keypoints sharing the detection level, across octave boundaries.
  const groupOf: number[][] = []; // per octave, per keypoint: group index
  const groupSizes: number[] = [];
  let prevLevel = -1;
  for (const oct of octaves) {
    const g: number[] = [];
    for (let i = 0; i < oct.x.length; i++) {
      if (oct.level[i] !== prevLevel) groupSizes.push(0);
      prevLevel = oct.level[i]!;
      groupSizes[groupSizes.length - 1]! += 1;
      g.push(groupSizes.length - 1);
    }
    groupOf.push(g);
  }
  let firstGroup = 0;
  let running = 0;
  for (let g = groupSizes.length - 1; g >= 0; g--) {
    running += groupSizes[g]!;
    if (running > opt.maxNumFeatures) {
      firstGroup = g;
      break;
    }
  }
  let count = 0;
  octaves.forEach((oct, oi) => {
    for (let i = 0; i < oct.x.length; i++) if (groupOf[oi]![i]! >= firstGroup) count += oct.numAngles[i]!;
  });
  const keypoints = new Float32Array(4 * count);
  const descriptors = new Uint8Array(128 * count);
  let n = 0;
  octaves.forEach((oct, oi) => {
    const xper = 2 ** oct.octave;
    for (let i = 0; i < oct.x.length; i++) {
      if (groupOf[oi]![i]! < firstGroup) continue;
      for (let a = 0; a < oct.numAngles[i]!; a++) {
        keypoints[4 * n] = (oct.x[i]! * xper + 0.5) * sx;
        keypoints[4 * n + 1] = (oct.y[i]! * xper + 0.5) * sy;
        keypoints[4 * n + 2] = oct.sigma[i]! * xper * ((sx + sy) / 2);
        const slot = oct.slots * i + a;
        keypoints[4 * n + 3] = oct.angles[slot]!;
        descriptors.set(oct.descriptors.subarray(128 * slot, 128 * (slot + 1)), 128 * n);
        n++;
      }
    }
  });
  return { keypoints, descriptors };
}

/** The CPU path's option check (sift.cc ValidateSiftOptions). */
function validSiftOptions(o: SiftOptions): boolean {
  return (
    o.maxImageSize > 0 &&
    o.maxNumFeatures > 0 &&
    o.firstOctave >= -1 &&
    o.firstOctave <= 4 &&
    o.numOctaves > 0 &&
    o.octaveResolution > 0 &&
    o.peakThreshold > 0 &&
    o.edgeThreshold > 0 &&
    o.maxNumOrientations > 0 &&
    (o.normalization === "l2" || o.normalization === "l1_root")
  );
}

/**
 * The WGSL twin of engine-wasm's `extractSift(engine, gray, width, height, options)`: same
 * inputs (8-bit gray or intensities in [0, 1]), options and output, computed on the GPU.
 */
export async function extractSiftGpu(
  sift: SiftGpu,
  gray: Float32Array | Uint8Array,
  width: number,
  height: number,
  options: Partial<SiftOptions> = {},
): Promise<SiftFeatures> {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width <= 0 || height <= 0) {
    throw new RangeError(`extractSiftGpu: invalid size ${width}x${height}`);
  }
  if (gray.length !== width * height) throw new RangeError(`extractSiftGpu: ${gray.length} pixels for ${width}x${height}`);
  const opt = { ...DEFAULT_SIFT_OPTIONS, ...options };
  if (!validSiftOptions(opt)) throw new RangeError("extractSiftGpu: invalid options");
  const image = prepareIntensity(gray, width, height, opt.maxImageSize);
  return sift.extract(image, opt, image.sx, image.sy);
}
