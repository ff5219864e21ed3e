/**
 * @module Hierarchical mapping's work units (spec 2.12 `hierarchical`; worker/routes/runners.md
 * "Hierarchical mapping"): the map task is sharded, and its shards are made as the work becomes
 * known. Shard 0 partitions the view graph (its item at PARTITION_PATH, its artifact's summary the
 * clusters by image name); the service then adds one shard per cluster (an item at clusterPath(k)
 * whose `images` are the cluster's, its file the cluster's models); when every cluster is mapped,
 * one last shard joins them (an item at MERGE_PATH that `reads` the clusters' files), seals the
 * snapshot and answers the task's `reconstruction.sparse.v1` artifact.
 */
import { z } from "zod";
import { CamerasFile, ImagesFile } from "./schemas/snapshot";

/** The partition item's path: `clusters.json`, `{clusters: [[image name, ...], ...]}` (each cluster's core first, then its overlap). */
export const PARTITION_PATH = "clusters.json";
/** The merge item's path; its artifact's files are the model's (cameras.json, images.json, points.bin, ...). */
export const MERGE_PATH = "reconstruction";
/** A cluster's item path (k from 1, the order of the partition). */
export const clusterPath = (k: number) => `clusters/${k}.json`;
export const isClusterPath = (path: string) => /^clusters\/[1-9][0-9]*\.json$/.test(path);

/** At most this many clusters: each is a shard, and a lease names every cluster's file in the merge item. */
export const MAX_CLUSTERS = 1000;

/** The partition item artifact's summary: each cluster's images by name (at least 2 each). */
export const HierarchicalPartition = z.object({
  clusters: z.array(z.array(z.string().min(1)).min(2)).max(MAX_CLUSTERS),
});
export type HierarchicalPartition = z.infer<typeof HierarchicalPartition>;

/** The format of a cluster's file (a backend-owned format of the core kind `reconstruction.sparse.v1`, 2.11 rule 2). */
export const CLUSTER_MODELS_FORMAT = "edgesfm.cluster_models.v1";

/**
 * A cluster's file: the models the incremental mapper made of its images, as snapshot files
 * (image and camera ids the dataset's, 1-based positions; points by id, positions and colours
 * flat, three per point).
 */
export const ClusterModelsFile = z.object({
  models: z.array(
    z.object({
      cameras: CamerasFile,
      images: ImagesFile,
      points: z.object({
        ids: z.array(z.number().int().positive()),
        xyz: z.array(z.number()),
        rgb: z.array(z.number().int().min(0).max(255)),
        track_length: z.array(z.number().int().min(0)),
      }),
    }),
  ),
});
export type ClusterModelsFile = z.infer<typeof ClusterModelsFile>;
