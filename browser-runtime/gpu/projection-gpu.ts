/**
 * @module Panorama projections on WebGPU (shaders/projection.wgsl), the twin of engine-wasm's
 * ts/projection.ts: same inputs (packed RGBA), same outputs; and `selectProjector`, which
 * measures both on the device once and binds the faster (the runner's rule for every kernel:
 * WGSL on real GPUs, wasm on software adapters).
 */

/// <reference types="@webgpu/types" />

import type { Engine } from "../../engine-wasm/ts/engine";
import {
  type PackedImage,
  type PerspectiveView,
  renderCubemapFace,
  renderEquirectangular,
  renderPerspective,
} from "../../engine-wasm/ts/projection";
import {
  CUBEMAP_FACES,
  CUBEMAP_RIG_FROM_FACE,
  type CubemapFace,
  SAMPLINGS,
  type Sampling,
  cubemapFaceParams,
} from "../../protocol/projection";
import { BufferPool, readBuffers, withErrorScopes } from "./buffers";
import type { GpuContext } from "./device";
import type { ShaderSources } from "./shader-sources";

const WORKGROUP = 8;
/** ProjectionParams in projection.wgsl: 8 words, intrinsics (4), rotation (3 x vec4), faces (18 x vec4). */
const PARAMS_WORDS = 8 + 4 + 12 + 72;

/** The pinhole view of a cubemap face (protocol/projection.ts). */
export function cubemapFaceView(face: CubemapFace, faceSize: number): PerspectiveView {
  const [f, , c] = cubemapFaceParams(faceSize) as [number, number, number, number];
  return { width: faceSize, height: faceSize, fx: f, fy: f, cx: c, cy: c, panoFromCam: CUBEMAP_RIG_FROM_FACE[face] };
}

function params(o: {
  srcWidth: number;
  srcHeight: number;
  dstWidth: number;
  dstHeight: number;
  sampling: Sampling;
  faceSize?: number;
  view?: PerspectiveView;
}): ArrayBuffer {
  const data = new ArrayBuffer(PARAMS_WORDS * 4);
  const u32 = new Uint32Array(data);
  const f32 = new Float32Array(data);
  u32.set([o.srcWidth, o.srcHeight, o.dstWidth, o.dstHeight, SAMPLINGS.indexOf(o.sampling), o.faceSize ?? 0, 0, 0]);
  if (o.view) {
    f32.set([o.view.fx, o.view.fy, o.view.cx, o.view.cy], 8);
    for (let row = 0; row < 3; row++) f32.set(o.view.panoFromCam.slice(3 * row, 3 * row + 3), 12 + 4 * row);
  }
  CUBEMAP_FACES.forEach((face, i) => {
    const r = CUBEMAP_RIG_FROM_FACE[face];
    for (let row = 0; row < 3; row++) f32.set(r.slice(3 * row, 3 * row + 3), 24 + 4 * (3 * i + row));
  });
  return data;
}

export class ProjectionGpu {
  private readonly pipelines: Record<"perspective_from_equirectangular" | "equirectangular_from_cubemap", GPUComputePipeline>;

  constructor(
    readonly device: GPUDevice,
    sources: Pick<ShaderSources, "projection">,
  ) {
    const module = device.createShaderModule({ label: "projection", code: sources.projection });
    const pipeline = (entryPoint: string) =>
      device.createComputePipeline({ label: entryPoint, layout: "auto", compute: { module, entryPoint } });
    this.pipelines = {
      perspective_from_equirectangular: pipeline("perspective_from_equirectangular"),
      equirectangular_from_cubemap: pipeline("equirectangular_from_cubemap"),
    };
  }

  /** Whether an image pair of these pixel counts fits this device's storage bindings. */
  fits(srcPixels: number, dstPixels: number): boolean {
    return 4 * Math.max(srcPixels, dstPixels) <= this.device.limits.maxStorageBufferBindingSize;
  }

  perspective(pano: PackedImage, view: PerspectiveView, sampling: Sampling): Promise<PackedImage> {
    const p = params({ srcWidth: pano.width, srcHeight: pano.height, dstWidth: view.width, dstHeight: view.height, sampling, view });
    return this.run("perspective_from_equirectangular", pano.data, p, view.width, view.height);
  }

  cubemapFace(pano: PackedImage, face: CubemapFace, faceSize: number, sampling: Sampling): Promise<PackedImage> {
    return this.perspective(pano, cubemapFaceView(face, faceSize), sampling);
  }

  /** A panorama (width x width / 2) from six square faces in the cubemap order. */
  equirectangular(faces: PackedImage[], width: number, sampling: Sampling): Promise<PackedImage> {
    const size = faces[0]?.width ?? 0;
    if (faces.length !== 6 || faces.some((f) => f.width !== size || f.height !== size))
      throw new RangeError("equirectangular: six square faces of one size");
    const all = new Uint32Array(6 * size * size);
    faces.forEach((f, i) => all.set(f.data, i * size * size));
    const p = params({ srcWidth: size, srcHeight: size, dstWidth: width, dstHeight: width / 2, sampling, faceSize: size });
    return this.run("equirectangular_from_cubemap", all, p, width, width / 2);
  }

  private run(
    entry: keyof ProjectionGpu["pipelines"],
    src: Uint32Array,
    p: ArrayBuffer,
    width: number,
    height: number,
  ): Promise<PackedImage> {
    return withErrorScopes(this.device, `projection ${entry}`, async () => {
      const pool = new BufferPool(this.device);
      try {
        const uniform = pool.track(this.device.createBuffer({ size: p.byteLength, usage: 0x40 | 0x08 /* UNIFORM | COPY_DST */ }));
        this.device.queue.writeBuffer(uniform, 0, p);
        const input = pool.storageFrom(src);
        const output = pool.storage(4 * width * height);
        const pipeline = this.pipelines[entry];
        const encoder = this.device.createCommandEncoder();
        const pass = encoder.beginComputePass();
        pass.setPipeline(pipeline);
        pass.setBindGroup(
          0,
          this.device.createBindGroup({
            layout: pipeline.getBindGroupLayout(0),
            entries: [uniform, input, output].map((buffer, binding) => ({ binding, resource: { buffer } })),
          }),
        );
        pass.dispatchWorkgroups(Math.ceil(width / WORKGROUP), Math.ceil(height / WORKGROUP));
        pass.end();
        this.device.queue.submit([encoder.finish()]);
        const [bytes] = await readBuffers(this.device, [{ buffer: output, bytes: 4 * width * height }]);
        return { data: new Uint32Array(bytes!), width, height };
      } finally {
        pool.destroy();
      }
    });
  }
}

/** The projection functions a runner calls, bound to the faster implementation on its device. */
export interface Projector {
  path: "wasm" | "webgpu";
  /** Calibration timings in milliseconds (after a warm-up run of each). */
  timings: { wasm: number; gpu?: number };
  perspective(pano: PackedImage, view: PerspectiveView, sampling: Sampling): Promise<PackedImage>;
  cubemapFace(pano: PackedImage, face: CubemapFace, faceSize: number, sampling: Sampling): Promise<PackedImage>;
  equirectangular(faces: PackedImage[], width: number, sampling: Sampling): Promise<PackedImage>;
  /** The wasm path alone, whatever was chosen (a task's `use_gpu: false`). */
  wasm?: Projector;
}

/** The projector a task runs on: with `use_gpu: false` (2.12) the wasm path, whatever the calibration chose. */
export function projectorFor(projector: Projector, useGpu: boolean): Projector {
  return useGpu ? projector : (projector.wasm ?? projector);
}

/** The wasm path alone. */
export function wasmProjector(engine: Engine, timings: Projector["timings"] = { wasm: 0 }): Projector {
  return {
    path: "wasm",
    timings,
    perspective: async (pano, view, sampling) => renderPerspective(engine, pano, view, sampling),
    cubemapFace: async (pano, face, size, sampling) => renderCubemapFace(engine, pano, face, size, sampling),
    equirectangular: async (faces, width, sampling) => renderEquirectangular(engine, faces, width, sampling),
  };
}

async function timeIt(run: () => Promise<unknown>): Promise<number> {
  await run();
  const start = performance.now();
  await run();
  return performance.now() - start;
}

/**
 * Measures both paths on a small workload (a 512 x 256 panorama to a 128-pixel face, cubic) and
 * binds the faster; wasm when there is no GPU. Images beyond the device's buffer limits take the
 * wasm path whatever was chosen.
 */
export async function selectProjector(
  engine: Engine,
  gpu: GpuContext | undefined,
  sources?: Pick<ShaderSources, "projection">,
): Promise<Projector> {
  const pano: PackedImage = { data: new Uint32Array(512 * 256).map((_, i) => (i * 2654435761) >>> 0), width: 512, height: 256 };
  const wasm = wasmProjector(engine);
  const wasmTime = await timeIt(() => wasm.cubemapFace(pano, "front", 128, "cubic"));
  if (!gpu || !sources) return { ...wasm, timings: { wasm: wasmTime } };
  const kernels = new ProjectionGpu(gpu.device, sources);
  const gpuTime = await timeIt(() => kernels.cubemapFace(pano, "front", 128, "cubic"));
  const timings = { wasm: wasmTime, gpu: gpuTime };
  if (!(gpuTime < wasmTime)) return { ...wasm, timings };
  return {
    path: "webgpu",
    timings,
    wasm,
    perspective: (p, view, sampling) =>
      kernels.fits(p.width * p.height, view.width * view.height)
        ? kernels.perspective(p, view, sampling)
        : wasm.perspective(p, view, sampling),
    cubemapFace: (p, face, size, sampling) =>
      kernels.fits(p.width * p.height, size * size)
        ? kernels.cubemapFace(p, face, size, sampling)
        : wasm.cubemapFace(p, face, size, sampling),
    equirectangular: (faces, width, sampling) =>
      kernels.fits(6 * (faces[0]?.width ?? 0) ** 2, (width * width) / 2)
        ? kernels.equirectangular(faces, width, sampling)
        : wasm.equirectangular(faces, width, sampling),
  };
}
