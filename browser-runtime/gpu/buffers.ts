/**
 * @module Small typed helpers over GPUBuffer: storage and uniform creation, uploads, and
 * read-back through a staging buffer (the only way to read GPU memory in WebGPU).
 */

/// <reference types="@webgpu/types" />

export const STORAGE = 0x80; // GPUBufferUsage.STORAGE (constants are globals only in browsers before device setup)
export const COPY_SRC = 0x04;
export const COPY_DST = 0x08;
export const UNIFORM = 0x40;
export const MAP_READ = 0x01;
export const INDIRECT = 0x100;

/** A storage buffer of `bytes` (rounded up to 4, at least 16), readable and writable by copies. */
export function storageBuffer(device: GPUDevice, bytes: number, label?: string): GPUBuffer {
  return device.createBuffer({ label, size: Math.max(16, Math.ceil(bytes / 4) * 4), usage: STORAGE | COPY_SRC | COPY_DST });
}

/** A storage buffer initialised with `data`. */
export function storageFrom(device: GPUDevice, data: ArrayBufferView, label?: string): GPUBuffer {
  const buffer = storageBuffer(device, data.byteLength, label);
  device.queue.writeBuffer(buffer, 0, data.buffer, data.byteOffset, data.byteLength);
  return buffer;
}

/**
 * A uniform buffer holding 32-bit fields in declaration order; `floatFields` lists the indices
 * that are f32 (the rest are u32/i32).
 */
export function uniformBuffer(device: GPUDevice, fields: number[], floatFields: number[] = [], label?: string): GPUBuffer {
  const words = Math.max(4, Math.ceil(fields.length / 4) * 4);
  const data = new ArrayBuffer(words * 4);
  const u32 = new Uint32Array(data);
  const f32 = new Float32Array(data);
  fields.forEach((v, i) => {
    if (floatFields.includes(i)) f32[i] = v;
    else u32[i] = v >>> 0;
  });
  const buffer = device.createBuffer({ label, size: data.byteLength, usage: UNIFORM | COPY_DST });
  device.queue.writeBuffer(buffer, 0, data);
  return buffer;
}

/** Copies `bytes` from each source (at offset 0) and maps them; one submit for all. */
export async function readBuffers(device: GPUDevice, sources: { buffer: GPUBuffer; bytes: number }[]): Promise<ArrayBuffer[]> {
  const staging = sources.map(({ bytes }) =>
    device.createBuffer({ size: Math.max(16, Math.ceil(bytes / 4) * 4), usage: MAP_READ | COPY_DST }),
  );
  const encoder = device.createCommandEncoder();
  sources.forEach(({ buffer, bytes }, i) => {
    if (bytes > 0) encoder.copyBufferToBuffer(buffer, 0, staging[i]!, 0, Math.ceil(bytes / 4) * 4);
  });
  device.queue.submit([encoder.finish()]);
  const out = await Promise.all(
    staging.map(async (s, i) => {
      await s.mapAsync(0x0001 /* GPUMapMode.READ */);
      const copy = s.getMappedRange().slice(0, sources[i]!.bytes);
      s.unmap();
      s.destroy();
      return copy;
    }),
  );
  return out;
}

/** Buffers created for one job, destroyed together. */
export class BufferPool {
  private readonly buffers: GPUBuffer[] = [];
  constructor(readonly device: GPUDevice) {}
  track<T extends GPUBuffer>(b: T): T {
    this.buffers.push(b);
    return b;
  }
  storage(bytes: number, label?: string): GPUBuffer {
    return this.track(storageBuffer(this.device, bytes, label));
  }
  storageFrom(data: ArrayBufferView, label?: string): GPUBuffer {
    return this.track(storageFrom(this.device, data, label));
  }
  uniform(fields: number[], floatFields: number[] = [], label?: string): GPUBuffer {
    return this.track(uniformBuffer(this.device, fields, floatFields, label));
  }
  destroy(): void {
    for (const b of this.buffers.splice(0)) b.destroy();
  }
}

/**
 * Runs `work` inside validation and out-of-memory error scopes and throws what they caught:
 * WebGPU reports those failures asynchronously instead of throwing at the faulty call. A scope's
 * error explains a failure of `work` too, so it is thrown first; the scopes are popped either way.
 */
export async function withErrorScopes<T>(device: GPUDevice, label: string, work: () => Promise<T>): Promise<T> {
  device.pushErrorScope("out-of-memory");
  device.pushErrorScope("validation");
  let outcome: { ok: true; value: T } | { ok: false; error: unknown };
  try {
    outcome = { ok: true, value: await work() };
  } catch (error) {
    outcome = { ok: false, error };
  }
  const errors = [await device.popErrorScope(), await device.popErrorScope()].filter((e) => e !== null);
  if (errors.length) throw new Error(`${label}: ${errors.map((e) => e!.message).join("; ")}`);
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}
