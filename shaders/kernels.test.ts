// Kernel-level checks of the WGSL building blocks against plain TypeScript references: the
// bitonic sort that restores VLFeat's keypoint order, the bit-exact octave resampling, and the
// blur's tiled and direct variants (same sums). The end-to-end agreement with the WASM SIFT is
// in browser-runtime/gpu/sift-gpu.test.ts.
import { beforeAll, describe, expect, it } from "vitest";
import { readBuffers, storageBuffer, storageFrom, uniformBuffer } from "../browser-runtime/gpu/buffers";
import { loadShaderSources, type ShaderSources } from "../browser-runtime/gpu/shader-sources";
import { gaussianTaps } from "../browser-runtime/gpu/sift-gpu";
import { testGpu } from "../browser-runtime/gpu/test-support";

const gpu = await testGpu();

describe.skipIf("error" in gpu)("WGSL kernels", () => {
  let device: GPUDevice;
  let sources: ShaderSources;

  beforeAll(async () => {
    if ("error" in gpu) return;
    device = gpu.device;
    sources = await loadShaderSources();
  });

  /** Runs one entry point with `buffers` at bindings 0.. and returns the bytes of `read`. */
  async function run(
    module: keyof ShaderSources,
    entryPoint: string,
    buffers: GPUBuffer[],
    groups: [number, number?],
    read: GPUBuffer,
    bytes: number,
    repeat?: (pass: GPUComputePassEncoder, bind: (b: GPUBuffer[]) => void) => void,
  ): Promise<ArrayBuffer> {
    const pipeline = device.createComputePipeline({
      layout: "auto",
      compute: { module: device.createShaderModule({ code: sources[module] }), entryPoint },
    });
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    const bind = (b: GPUBuffer[]) =>
      pass.setBindGroup(
        0,
        device.createBindGroup({
          layout: pipeline.getBindGroupLayout(0),
          entries: b.map((buffer, binding) => ({ binding, resource: { buffer } })),
        }),
      );
    if (repeat) repeat(pass, bind);
    else {
      bind(buffers);
      pass.dispatchWorkgroups(groups[0], groups[1] ?? 1);
    }
    pass.end();
    device.queue.submit([encoder.finish()]);
    return (await readBuffers(device, [{ buffer: read, bytes }]))[0]!;
  }

  it("bitonic_sort orders (key, value) pairs by key, padding last", async () => {
    const n = 1000;
    const padded = 1024;
    const pairs = new Uint32Array(2 * padded).fill(0xffffffff);
    for (let i = 0; i < n; i++) {
      pairs[2 * i] = (Math.imul(i, 2654435761) >>> 4) & 0x3fffffff; // distinct pseudo-random keys
      pairs[2 * i + 1] = i;
    }
    const buffer = storageFrom(device, pairs);
    const out = new Uint32Array(
      await run("bitonic_sort", "bitonic_step", [], [0], buffer, 8 * padded, (pass, bind) => {
        for (let block = 2; block <= padded; block *= 2) {
          for (let stride = block / 2; stride >= 1; stride /= 2) {
            bind([uniformBuffer(device, [block, stride, padded]), buffer]);
            pass.dispatchWorkgroups(Math.ceil(padded / 2 / 256));
          }
        }
      }),
    );
    const expected = Array.from({ length: n }, (_, i) => [pairs[2 * i]!, i]).sort((a, b) => a[0]! - b[0]!);
    expect(Array.from(out.subarray(0, 2 * n))).toEqual(expected.flat());
    expect(out[2 * n]).toBe(0xffffffff);
  });

  it("upsample_2x is VLFeat's bilinear doubling, bit for bit", async () => {
    const [w, h] = [7, 5];
    const src = Float32Array.from({ length: w * h }, (_, i) => Math.fround(Math.sin(i * 1.7) * 0.5 + 0.5));
    const dst = storageBuffer(device, 4 * 4 * w * h);
    const out = new Float32Array(
      await run(
        "resample",
        "upsample_2x",
        [uniformBuffer(device, [w, h, 2 * w, 2 * h, 0, 0]), storageFrom(device, src), dst],
        [1, 1],
        dst,
        16 * w * h,
      ),
    );
    // copy_and_upsample_rows twice: along x, then along y.
    const up = (row: Float32Array, n: number) =>
      Float32Array.from({ length: 2 * n }, (_, i) =>
        i % 2 === 0 || (i >> 1) + 1 >= n ? row[i >> 1]! : Math.fround(0.5 * Math.fround(row[i >> 1]! + row[(i >> 1) + 1]!)),
      );
    const rows = Array.from({ length: h }, (_, y) => up(src.subarray(y * w, (y + 1) * w), w));
    const expected = new Float32Array(4 * w * h);
    for (let x = 0; x < 2 * w; x++) {
      const column = up(
        Float32Array.from(rows, (r) => r[x]!),
        h,
      );
      for (let y = 0; y < 2 * h; y++) expected[y * 2 * w + x] = column[y]!;
    }
    expect(out).toEqual(expected);
  });

  it("the tiled and direct blurs compute the same sums as a reference convolution", async () => {
    const [w, h] = [37, 29];
    const src = Float32Array.from({ length: w * h }, (_, i) => Math.fround(((i * 7919) % 101) / 101));
    const taps = gaussianTaps(2.4525);
    const r = (taps.length - 1) / 2;
    const ref = new Float32Array(w * h);
    const at = (x: number, y: number) => src[Math.min(h - 1, Math.max(0, y)) * w + Math.min(w - 1, Math.max(0, x))]!;
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++) {
        let acc = 0;
        for (let k = -r; k <= r; k++) acc = Math.fround(acc + Math.fround(taps[k + r]! * at(x, y + k)));
        ref[y * w + x] = acc;
      }
    for (const [entry, groups] of [
      ["blur_vertical", [Math.ceil(w / 16), Math.ceil(h / 16)]],
      ["blur_vertical_direct", [Math.ceil(w / 64), h]],
    ] as const) {
      const dst = storageBuffer(device, 4 * w * h);
      const out = new Float32Array(
        await run(
          "gaussian_blur",
          entry,
          [uniformBuffer(device, [w, h, r, 0, 0]), storageFrom(device, taps), storageFrom(device, src), dst],
          [groups[0], groups[1]],
          dst,
          4 * w * h,
        ),
      );
      const maxError = out.reduce((m, v, i) => Math.max(m, Math.abs(v - ref[i]!)), 0);
      expect(maxError, entry).toBeLessThan(1e-6);
    }
  });
});
