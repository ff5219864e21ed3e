/**
 * @module The `match` stage (spec 2.12 MatcherSpec; capabilities `matchers.nn-mutual`,
 * `matchers.nn-ratio`): `svc.features.local.v1` artifacts + image pairs -> one
 * `svc.matches.indexed.v1` artifact, with COLMAP's brute-force SIFT matching rules
 * (ratio 0.8, distance 0.7 rad, cross check) on the CPU engine (wasm).
 */
import type { Engine } from "../../engine-wasm/ts/engine";
import { DEFAULT_MATCH_OPTIONS, matchDescriptors, type MatchOptions } from "../../engine-wasm/ts/feature";
import { decodeFeatures, type LocalFeatures } from "../../protocol/wire/features";
import { encodeMatches, type PairMatches } from "../../protocol/wire/matches";
import type { ImagePair } from "./pairs";

/** The MatcherSpec fields this stage reads (spec 2.12). */
export interface MatcherSpecLike {
  type?: string;
  cross_check?: boolean;
  max_ratio?: number;
  max_distance?: number;
}

/** `nn-mutual` forces the mutual check; `nn-ratio` uses the spec's cross_check (default true). */
export function matchOptionsFromSpec(spec: MatcherSpecLike = {}): MatchOptions {
  const type = spec.type ?? "nn-mutual";
  if (type !== "nn-mutual" && type !== "nn-ratio") throw new RangeError(`match: matcher type ${type} is not supported here`);
  return {
    maxRatio: spec.max_ratio ?? DEFAULT_MATCH_OPTIONS.maxRatio,
    maxDistance: spec.max_distance ?? DEFAULT_MATCH_OPTIONS.maxDistance,
    crossCheck: type === "nn-mutual" ? true : (spec.cross_check ?? DEFAULT_MATCH_OPTIONS.crossCheck),
  };
}

export interface MatchStageInput {
  /** Features per image name: artifact bytes or already decoded. */
  features: ReadonlyMap<string, Uint8Array | LocalFeatures>;
  pairs: readonly ImagePair[];
  /** Resource ids per image name, written into the artifact when known. */
  imageIds?: ReadonlyMap<string, string>;
  spec?: MatcherSpecLike;
}

export interface MatchStageResult {
  bytes: Uint8Array;
  pairs: PairMatches[];
}

/** Matches every pair and encodes the artifact. Artifacts are decoded once each. */
export function matchFeatures(engine: Engine, input: MatchStageInput): MatchStageResult {
  const options = matchOptionsFromSpec(input.spec);
  const decoded = new Map<string, LocalFeatures>();
  const get = (name: string): LocalFeatures => {
    let f = decoded.get(name);
    if (!f) {
      const raw = input.features.get(name);
      if (!raw) throw new RangeError(`match: no features for image ${name}`);
      f = raw instanceof Uint8Array ? decodeFeatures(raw) : raw;
      if (f.descriptorDim !== 128) throw new RangeError(`match: image ${name} has ${f.descriptorDim}-d descriptors, SIFT needs 128`);
      decoded.set(name, f);
    }
    return f;
  };
  const pairs: PairMatches[] = input.pairs.map(({ imageName1, imageName2 }) => {
    const matches = matchDescriptors(engine, get(imageName1).descriptors, get(imageName2).descriptors, options);
    const id1 = input.imageIds?.get(imageName1);
    const id2 = input.imageIds?.get(imageName2);
    return { imageName1, imageName2, ...(id1 ? { imageId1: id1 } : {}), ...(id2 ? { imageId2: id2 } : {}), matches };
  });
  return { bytes: encodeMatches(pairs), pairs };
}
