/**
 * @module The per-item engine calls of the extract, match and verify stages (SIFT on one image,
 * matching one pair, verifying a few pairs), bound to one wasm engine: what an engine worker
 * serves (engine-worker.ts) and what a single-core runner calls in its own thread.
 */
import type { Engine } from "../../../engine-wasm/ts/engine";
import { extractSift, matchDescriptors, type MatchOptions, type SiftFeatures, type SiftOptions } from "../../../engine-wasm/ts/feature";
import { verifyTwoView, type TwoViewInput, type TwoViewResult } from "../../../engine-wasm/ts/two-view";

export interface EngineCalls {
  extract(gray: Float32Array | Uint8Array, width: number, height: number, options?: Partial<SiftOptions>): Promise<SiftFeatures>;
  match(descA: Uint8Array, descB: Uint8Array, options?: Partial<MatchOptions>): Promise<Uint32Array>;
  /** Verifies several pairs in one call (fewer messages); answers in input order. */
  verify(pairs: TwoViewInput[]): Promise<TwoViewResult[]>;
}

export function engineCalls(engine: Engine): EngineCalls {
  return {
    extract: async (gray, width, height, options) => extractSift(engine, gray, width, height, options),
    match: async (descA, descB, options) => matchDescriptors(engine, descA, descB, options),
    verify: async (pairs) => pairs.map((pair) => verifyTwoView(engine, pair)),
  };
}
