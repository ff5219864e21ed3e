/**
 * @module Results of shard leases for workerd tests that stand in for a stage's runner: real wire
 * files of the core formats, since the service reads every shard result against its shard before
 * accepting it (runners.md "Trust"), whoever computed it.
 */
import {
  CORE_ARTIFACT_FORMATS,
  CORE_ARTIFACT_KINDS,
  type CoreArtifactKind,
  type Lease,
  type ShardItem,
  type TaskOutputs,
} from "../../protocol";
import { DescriptorKind, encodeFeatures } from "../../protocol/wire/features";
import { encodeMatches } from "../../protocol/wire/matches";
import type { DigestRunner } from "../../scripts/digest-runner";

/** A features file of `n` keypoints (positions moved by `seed`: another seed, other bytes). */
export const featuresFile = (n: number, seed = 0) =>
  encodeFeatures({
    imageWidth: 64,
    imageHeight: 48,
    descriptorDim: 128,
    descriptorKind: DescriptorKind.siftL1Root,
    keypoints: Float32Array.from({ length: 4 * n }, (_, i) => (i % 4 === 2 ? 1 : 10 + i + seed)),
    descriptors: new Uint8Array(128 * n),
  });

/** Two images of a match item's block, one of each list (the same list twice: two images of it); null when it has one image. */
export function blockPair({ block }: ShardItem): [string, string] | null {
  const [g, h] = block!;
  const other = h.find((n) => n !== g[0]);
  return other ? [g[0]!, other] : null;
}

/** A matches file of one pair of the item's block (`blockPair`), keypoint 0 of each image matched. */
export function blockMatches(item: ShardItem): Uint8Array {
  const pair = blockPair(item);
  return encodeMatches(pair ? [{ imageName1: pair[0], imageName2: pair[1], matches: Uint32Array.from([0, 0]) }] : []);
}

/** One `kind` artifact per item of the shard lease, each one file of `bytes(item)` at the item's path, uploaded under the lease. */
export async function shardOutputs(
  r: DigestRunner,
  lease: Lease,
  kind: CoreArtifactKind,
  bytes: (item: ShardItem) => Uint8Array,
  summary: () => Record<string, unknown> = () => ({}),
): Promise<TaskOutputs> {
  const { media_type } = CORE_ARTIFACT_KINDS[kind];
  const artifacts = [];
  for (const item of lease.shard!.items) {
    const file = bytes(item);
    artifacts.push({
      kind,
      name: item.path,
      uri: null,
      artifact_format: CORE_ARTIFACT_FORMATS[kind],
      schema_version: 1,
      media_type,
      summary: summary(),
      metadata: {},
      files: [{ path: item.path, blob_sha: await r.upload(lease, file), byte_size: file.byteLength, media_type }],
    });
  }
  return { artifacts, result: null };
}
