/**
 * @module Executor of a hierarchical map task's shards (spec 2.12 `hierarchical`;
 * protocol/hierarchical.ts): each lease covers one of its work units.
 *
 * - The partition (phase `hierarchical_cluster`): the verified pairs merged into the
 *   reconstruction's `two_view_geometries.json` (and its correspondence graph written), and the view
 *   graph weighted by inlier counts cut into clusters of at most `cluster_max_size` images, each
 *   grown by `cluster_overlap` images on its strongest edges (stages/partition.ts). The clusters go
 *   back by image name in the artifact's summary; the service makes a shard of each.
 * - A cluster: the incremental mapper on the cluster's images and the verified pairs inside it
 *   (through the view-graph filter, as any mapping), every model it makes written as snapshot files
 *   in one file (ClusterModelsFile), in the dataset's image and camera ids.
 * - The merge (phase `hierarchical_merge`): the clusters' models joined by the Sim3 their shared
 *   photos give and refined by one bundle adjustment, each set of clusters that connect as one
 *   model (stages/merge.ts joinModelGroups; joinSubModels is the path that joins an incremental
 *   run's models): a place's clusters give one model, photos of places that do not connect one
 *   model each. Sealed with the largest at the root and each other as a component of its own
 *   (4.9). Its artifact is the task's `reconstruction.sparse.v1`.
 */
import { IncrementalMapping, extendModel, type MappingInput, type MappingPair } from "../../../engine-wasm/ts/mapping";
import {
  CLUSTER_MODELS_FORMAT,
  ClusterModelsFile,
  MERGE_PATH,
  PARTITION_PATH,
  PipelineSpec,
  type ShardItem,
  type TaskOutputs,
  isClusterPath,
} from "../../../protocol";
import { decodePoints } from "../../../protocol/wire/points";
import type { VerifiedMatchesFile } from "../../../protocol/wire/verified-matches";
import { datasetCameras } from "../../stages/cameras";
import { type SnapshotModel, joinModelGroups } from "../../stages/merge";
import { partitionViewGraph } from "../../stages/partition";
import { mappingPriors } from "../../stages/positions";
import { type ModelFiles, type SnapshotImageInput, mappedModelOf, modelFiles, snapshotModelFiles } from "../../stages/snapshot";
import { mappingPairs } from "../../stages/view-graph";
import type { TaskContext } from "../task-context";
import { coreArtifact, datasetOf } from "./artifact";
import { writeCorrespondenceGraph } from "./correspondence-graph";
import { datasetKeypoints } from "./keypoints";
import {
  NoModelError,
  addColors,
  bundleAdjustmentOptions,
  mergedVerifiedMatches,
  reportProgress,
  sealModels,
  verifiedMatches,
} from "./map";
import { shardOf } from "./shard";

type HierarchicalSpec = Extract<PipelineSpec, { kind: "hierarchical" }>;

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

/** The partition's artifact kind and format (backend-owned, 2.11 rule 2). */
const PARTITION_KIND = "edgesfm.view_graph_partition.v1";

export async function mapHierarchical(ctx: TaskContext): Promise<TaskOutputs> {
  const spec = PipelineSpec.parse(ctx.params.spec);
  if (spec.kind !== "hierarchical") throw new Error(`a sharded map task maps a 'hierarchical' pipeline, not '${spec.kind}'`);
  const [item] = shardOf(ctx.lease).items;
  if (item?.path === PARTITION_PATH) return partition(ctx, spec);
  if (item && isClusterPath(item.path)) return mapCluster(ctx, spec, item);
  if (item?.path === MERGE_PATH) return mergeClusters(ctx, spec, item);
  throw new Error(`no hierarchical mapping work unit at '${item?.path}'`);
}

/**
 * Every dataset image as the mapper takes it, alike in every work unit: its keypoints and the dataset's cameras
 * (shared by size); `input` makes a mapping input of them with the given pairs and cameras (mappingPairs'
 * own, which may have let a contradicted prior go).
 */
async function mappingImages(ctx: TaskContext) {
  const dataset = datasetOf(ctx.lease);
  const keypoints = await datasetKeypoints(ctx);
  const { cameras, cameraOfImage } = datasetCameras(dataset, keypoints);
  const images: SnapshotImageInput[] = dataset.images.map((im, i) => ({
    name: im.name,
    camera: cameraOfImage[i]!,
    keypoints: keypoints[i]!.xy,
  }));
  const input = ({ pairs, cameras }: { pairs: MappingPair[]; cameras: MappingInput["cameras"] }): MappingInput => ({
    cameras: cameras.map((c) => ({ ...c })),
    images: images.map((im) => ({ camera: im.camera, keypoints: im.keypoints })),
    pairs,
  });
  return { keypoints, cameras, cameraOfImage, images, input };
}

/** The verified pairs the mapper takes (stages/view-graph.ts mappingPairs: through the view-graph filter), re-verified on the runner's engines where a pair needs its rotation. */
function filteredPairs(
  ctx: TaskContext,
  spec: HierarchicalSpec,
  pairs: VerifiedMatchesFile["pairs"],
  { cameras, cameraOfImage, keypoints }: Awaited<ReturnType<typeof mappingImages>>,
) {
  return mappingPairs(pairs, { cameras, cameraOfImage }, keypoints, spec.seed, async (batch) => {
    await ctx.cancelPoint();
    return ctx.engines.verify(batch);
  });
}

async function partition(ctx: TaskContext, spec: HierarchicalSpec): Promise<TaskOutputs> {
  const dataset = datasetOf(ctx.lease);
  const verified = await mergedVerifiedMatches(ctx);
  await writeCorrespondenceGraph(ctx);
  await ctx.cancelPoint();
  const clusters = partitionViewGraph(
    verified.pairs.map((p) => ({ image1: p.image_id1 - 1, image2: p.image_id2 - 1, weight: p.num_inliers })),
    { maxSize: spec.cluster_max_size, overlap: spec.cluster_overlap },
  );
  // A cluster of one photo (a core of one with no overlap) cannot be mapped on its own.
  const mappable = clusters.filter((c) => c.images.length >= 2);
  const named = mappable.map((c) => [...c.core, ...c.images.filter((i) => !c.core.includes(i))].map((i) => dataset.images[i]!.name));
  const onEdges = new Set(clusters.flatMap((c) => c.core)).size;
  ctx.log(
    "INFO",
    `view graph of ${onEdges} images with verified pairs (of ${dataset.images.length}) cut into ${mappable.length} cluster(s) of at most ${spec.cluster_max_size} images, each grown by up to ${spec.cluster_overlap} overlapping images` +
      (mappable.length < clusters.length ? `; ${clusters.length - mappable.length} single image(s) with no overlap are left out` : ""),
  );
  const file = await ctx.write(PARTITION_PATH, json({ clusters: named }), "application/json");
  return {
    artifacts: [
      {
        kind: PARTITION_KIND,
        name: "view graph clusters",
        uri: null,
        artifact_format: PARTITION_KIND,
        schema_version: 1,
        media_type: "application/json",
        summary: { clusters: named, num_clusters: named.length },
        metadata: {},
        files: [file],
      },
    ],
    result: null,
  };
}

async function mapCluster(ctx: TaskContext, spec: HierarchicalSpec, item: ShardItem): Promise<TaskOutputs> {
  const dataset = datasetOf(ctx.lease);
  const indexOf = new Map(dataset.images.map((im, i) => [im.name, i]));
  const members = item.images.map((name) => {
    const i = indexOf.get(name);
    if (i === undefined) throw new Error(`cluster ${item.path} names '${name}', no image of the dataset`);
    return i;
  });
  const inCluster = new Set(members);
  const mi = await mappingImages(ctx);
  const { images } = mi;
  await addColors(ctx, images, members);
  const verified = await verifiedMatches(ctx);
  const inside = verified.pairs.filter((p) => inCluster.has(p.image_id1 - 1) && inCluster.has(p.image_id2 - 1));
  const filtered = await filteredPairs(ctx, spec, inside, mi);
  const { pairs, withInliers, dropped } = filtered;
  if (dropped > 0)
    ctx.log("INFO", `view-graph filter: ${dropped} of ${withInliers} verified pairs of the cluster contradict the rest and are not mapped`);
  const priors = mappingPriors(dataset.images);
  const mapping = new IncrementalMapping(await ctx.engine(), mi.input(filtered), {
    seed: spec.seed,
    snapshot_frames_freq: spec.snapshot_frames_freq,
    ...bundleAdjustmentOptions(ctx),
    pose_priors: priors?.priors.filter((p) => inCluster.has(p.image)) ?? [],
  });
  let file: ClusterModelsFile;
  try {
    for (;;) {
      await ctx.cancelPoint();
      reportProgress(ctx, mapping.progress());
      if (mapping.step(1) === "done") break;
    }
    file = {
      models: mapping.models().map((model) => {
        const f = modelFiles(model, images);
        const cloud = decodePoints(f.points);
        return {
          cameras: f.cameras,
          images: f.images,
          points: {
            ids: Array.from(cloud.ids, Number),
            xyz: Array.from(cloud.xyz),
            rgb: Array.from(cloud.rgb),
            track_length: Array.from(cloud.trackLength),
          },
        };
      }),
    };
  } finally {
    mapping.free();
  }
  const sizes = file.models.map((m) => m.images.images.length);
  ctx.log(
    file.models.length ? "INFO" : "WARNING",
    `cluster ${item.path}: ${file.models.length} model(s) of ${sizes.join(", ") || "no"} images from ${members.length} images and ${pairs.length} pairs`,
  );
  const written = await ctx.write(item.path, json(file), "application/json");
  return {
    artifacts: [
      {
        ...coreArtifact("reconstruction.sparse.v1", `cluster ${item.path}`, [written], {
          num_models: file.models.length,
          num_reg_images: Math.max(0, ...sizes),
        }),
        artifact_format: CLUSTER_MODELS_FORMAT,
      },
    ],
    result: null,
  };
}

async function mergeClusters(ctx: TaskContext, spec: HierarchicalSpec, item: ShardItem): Promise<TaskOutputs> {
  const reads = item.reads ?? [];
  ctx.progress(0, reads.length + 1, "hierarchical_merge");
  const models: SnapshotModel[] = [];
  for (const [k, f] of reads.entries()) {
    await ctx.cancelPoint();
    const file = ClusterModelsFile.parse(JSON.parse(new TextDecoder().decode(await ctx.read(f.blob_sha))));
    for (const m of file.models) {
      models.push({
        cameras: m.cameras,
        images: m.images,
        points: {
          ids: BigUint64Array.from(m.points.ids, BigInt),
          xyz: Float32Array.from(m.points.xyz),
          rgb: Uint8Array.from(m.points.rgb),
          trackLength: Uint16Array.from(m.points.track_length),
        },
      });
    }
    ctx.progress(k + 1, reads.length + 1, "hierarchical_merge");
  }
  if (models.length === 0)
    throw new NoModelError(`no cluster of the ${reads.length} gave a model: no initial image pair could be reconstructed`);
  models.sort((a, b) => b.images.images.length - a.images.images.length);
  await ctx.cancelPoint();
  // One model per set of clusters their shared photos join (a place), the largest at the root.
  const groups = joinModelGroups(await ctx.engine(), models);
  for (const g of groups.filter((g) => g.members.length > 1))
    ctx.log(
      "INFO",
      `joined ${g.members.length} of ${models.length} cluster models by the Sim3 of their shared photos: ${g.model.images.images.length} images, ${g.model.points.ids.length} points, mean reprojection error ${g.model.mean_reproj_err?.toPrecision(3)} px after bundle adjustment`,
    );
  // Each group's model, largest first, after the images no cluster model held are registered into it (the root's
  // from all of them, each next one's from those no model before it holds: a model never takes another's photos); each
  // after the root a component of its own (4.9), unless the models before it hold all its images.
  const finalPass = await leftOutPass(ctx, spec);
  const components: ModelFiles[] = [];
  const held = new Set<string>();
  let registered = 0;
  for (const [k, { model }] of groups.entries()) {
    if (k > 0 && model.images.images.every((im) => held.has(im.name))) continue;
    // Another place's model the pass loses is sealed as its clusters joined it, rather than failing the whole merge.
    const extended = await finalPass
      .register(model, held, k === 0 ? "the joined model" : `model ${k + 1} (of another place)`)
      .catch((e) => {
        if (k === 0 || !(e instanceof NoModelError)) throw e;
        ctx.log("WARNING", `${e.message}: sealed as its clusters joined it`);
        return null;
      });
    const files = extended ?? snapshotModelFiles(model);
    registered += files.images.images.length - model.images.images.length;
    for (const im of files.images.images) held.add(im.name);
    components.push(files);
  }
  components.sort((a, b) => b.summary.num_reg_images - a.summary.num_reg_images);
  if (components.length > 1)
    ctx.log(
      "WARNING",
      `${components.length - 1} model(s) share too few aligned photos with the largest to be joined to it: sealed as components of their own`,
    );
  const final = await sealModels(ctx, components, "final", null, null);
  ctx.progress(reads.length + 1, reads.length + 1, "hierarchical_merge");
  ctx.metric("num_reg_images", final.root.num_reg_images);
  ctx.metric("num_points3D", final.root.num_points3D);
  return {
    artifacts: [
      coreArtifact("reconstruction.sparse.v1", "sparse reconstruction", final.files, {
        num_models: components.length,
        ...final.root,
        "x-mapper": "hierarchical",
        "x-clusters": reads.length,
        "x-cluster_models": models.length,
        "x-joined_cluster_models": groups[0]!.members.length,
        "x-registered_after_merge": registered,
      }),
    ],
    result: null,
  };
}

/**
 * The final pass of the merge (as COLMAP's incremental mapper ends a model): the images with verified pairs that no
 * cluster registered, or whose cluster model did not join, tried against a whole joined model. The engine's
 * incremental mapper continues from the joined model (IncrementalMapping.extend) on the verified pairs of the set
 * (through the view-graph filter, as any mapping; those of images `heldElsewhere` by another model left out, unless the
 * model holds them too): next-best-view registration with triangulation and local bundle adjustment, then global
 * refinement (retriangulation and bundle adjustment). A cluster too weakly connected to map its own photos (a chain's
 * last few, attached to the overlap by a weak pair or two) loses them only until here. `register` answers null when
 * the model holds every such image already. The set's pairs are read and filtered once, for all models.
 */
async function leftOutPass(ctx: TaskContext, spec: HierarchicalSpec) {
  const dataset = datasetOf(ctx.lease);
  const verified = await verifiedMatches(ctx);
  const reachable = new Set(verified.pairs.filter((p) => p.num_inliers > 0).flatMap((p) => [p.image_id1 - 1, p.image_id2 - 1]));
  const indexOf = new Map(dataset.images.map((im, i) => [im.name, i]));
  const priors = mappingPriors(dataset.images);
  const prepare = async () => {
    const mi = await mappingImages(ctx);
    return { mi, filtered: await filteredPairs(ctx, spec, verified.pairs, mi) };
  };
  let prepared: ReturnType<typeof prepare> | undefined;
  const register = async (model: SnapshotModel, heldElsewhere: ReadonlySet<string>, which: string): Promise<ModelFiles | null> => {
    const held = new Set(model.images.images.map((im) => im.name));
    const open = (i: number) => held.has(dataset.images[i]!.name) || !heldElsewhere.has(dataset.images[i]!.name);
    const leftOut = [...reachable].filter((i) => open(i) && !held.has(dataset.images[i]!.name));
    if (leftOut.length === 0) return null;
    const { mi, filtered } = await (prepared ??= prepare());
    const input = mi.input({ ...filtered, pairs: filtered.pairs.filter((p) => open(p.image1) && open(p.image2)) });
    const options = { seed: spec.seed, ...bundleAdjustmentOptions(ctx), pose_priors: priors?.priors ?? [] };
    const grown = await extendModel(
      await ctx.engine(),
      input,
      options,
      mappedModelOf(model, input.cameras, (name) => indexOf.get(name)),
      async (mapping) => {
        await ctx.cancelPoint();
        const p = mapping.progress();
        // Images held by the models before this one and by this one so far, of all with verified pairs.
        ctx.progress(Math.min(reachable.size, heldElsewhere.size + p.imagesHeld), reachable.size + 1, "hierarchical_merge");
      },
    );
    if (!grown) throw new NoModelError(`${which} was lost in the final registration pass`);
    const registered = new Set(grown.images.map((m) => m.image));
    await addColors(ctx, mi.images, registered);
    const names = (list: number[]) => list.map((i) => dataset.images[i]!.name).join(", ");
    const now = leftOut.filter((i) => registered.has(i));
    const still = leftOut.filter((i) => !registered.has(i));
    ctx.log(
      still.length ? "WARNING" : "INFO",
      `final registration pass: ${now.length} of the ${leftOut.length} image(s) no joined cluster model held registered into ${which}` +
        (now.length ? ` (${names(now)})` : "") +
        (still.length ? `; not registered: ${names(still)}` : "") +
        `; ${grown.images.length} images, mean reprojection error ${grown.meanReprojectionError.toPrecision(3)} px after global refinement`,
    );
    return modelFiles(grown, mi.images);
  };
  return { register };
}
