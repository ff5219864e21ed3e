/**
 * @module Similarity (spec 4.11, capabilities `similarity.dhash` and `similarity.vlad`): the
 * dataset's dHash and VLAD indices, as the `:build` route, a query and retrieval pairs (2.12) see them.
 *
 * VLAD (rule 2): the index is the output of a runner's `vlad` task over the features of the
 * dataset's default extraction (`vladChain`: the extract stage at FeaturesSpec defaults, then the
 * task; the runners' VLAD vectors, browser-runtime/stages/vlad.ts). `:build?strategy=vlad`
 * submits that chain as a job (202, a cache hit when the index of this manifest exists); a
 * pipeline with retrieval pairs runs its own `vlad` task after its extraction, the same task when
 * its features are the defaults. Found by the chain's cache key, so a changed manifest has none.
 *
 * The index is the output of the dataset's `vlad` stage (`DHASH_STAGE`, phase `vlad_index`): a
 * `features.global.v1` artifact holding every image's hash. It is found by that stage's cache key,
 * which depends on the dataset's manifest and settings alone (4.11 rule 4: a changed manifest has
 * another key, so its index is built anew) and is the same whoever computed it: a pipeline's task
 * on a runner, or the Worker here, synchronously, on `:build` or on the first query (rule 1), as a
 * job born succeeded (like an artifact import, 4.10). Here each image's hash is cached in R2 beside
 * its bytes, keyed by content, so a rebuild after adding photos decodes only the new ones.
 */
import {
  FeaturesSpec,
  type JobAccepted,
  type PairsSpec,
  RETRIEVAL_INDEX_ROLE,
  type SimilarityManifest,
  type SimilarityNeighbors,
  type StageArtifact,
  pairsCapabilities,
} from "../../protocol";
import {
  DHASH_INDEX_MEDIA_TYPE,
  DHASH_INDEX_PATH,
  Dhash,
  type DhashIndex,
  decodeDhashIndex,
  dhash,
  dhashIndexArtifact,
  encodeDhashIndex,
  nearestByHamming,
} from "../../protocol/wire/dhash";
import { DEFAULT_VOCAB_TREE_ID, MAX_VOCAB_TREE_BYTES, VOCAB_TREE_BLOB, VocabTreeFile } from "../../protocol/wire/bow";
import { VLAD_INDEX_PATH, type VladIndex, decodeVladIndex, nearestByCosine } from "../../protocol/wire/vlad";
import { ApiError, type FieldError, notFound, validation } from "../errors";
import type { ArtifactRow, DatasetRow, ImageRow } from "../storage/tenant-rows";
import { artifactResource } from "./artifacts";
import { blobKey, sha256Hex } from "./blobs";
import { DECODERS, MAX_DECODE_PIXELS, orient } from "./decode";
import { requireCapability } from "./capabilities";
import { readOrientation } from "./exif-tags";
import { type Stage, datasetChainCacheKey, datasetStageCacheKey, frozenDataset, submitJob, submitOnDataset } from "./jobs";
import { tenantStore, unwrap } from "./stores";

/** The stage that builds the dHash index: a runner's `vlad` task in a pipeline, the Worker's on `:build`. */
export const DHASH_STAGE: Stage = { kind: "vlad", params: { similarity: { strategy: "dhash" } }, dataset_only: true };

/** The runner task that computes VLAD vectors from its upstream features. */
export const VLAD_STAGE: Stage = { kind: "vlad", params: { similarity: { strategy: "vlad" } } };
/**
 * The runner task that computes the bags of words vocabulary-tree pairs (2.12 `vocabtree`) read,
 * from its upstream features, in the tree `vocab_tree_path` names: null or the shipped tree's id,
 * or `blob:<sha256>`, a tree file (protocol/wire/bow.ts VocabTreeFile) the tenant uploaded, which
 * the job then holds. Anything else, a blob the tenant does not store, or one that is not a tree is
 * 422 before anything is created. Null for other strategies.
 */
export async function vocabTreeStage(
  env: Env,
  tenantId: string,
  pairs: PairsSpec,
): Promise<{ stage: Stage; input_blobs: { blob_sha: string; byte_size: number }[] } | null> {
  if (pairs.strategy !== "vocabtree") return null;
  const path = pairs.vocab_tree_path;
  const shipped = {
    stage: { kind: "vlad" as const, params: { similarity: { strategy: "vocabtree", tree_blob_sha: null } } },
    input_blobs: [],
  };
  if (path === null || path === DEFAULT_VOCAB_TREE_ID) return shipped;
  const bad = (message: string, code: string) =>
    validation(`vocab_tree_path: ${message}`, [{ path: "pairs.vocab_tree_path", message, code }]);
  const sha = VOCAB_TREE_BLOB.exec(path)?.[1];
  if (!sha)
    throw bad(`null, '${DEFAULT_VOCAB_TREE_ID}' (the shipped tree) or 'blob:<sha256>' of an uploaded tree`, "malformed_vocab_tree_path");
  const blob = await tenantStore(env, tenantId).getBlob(sha);
  const obj = blob && blob.size <= MAX_VOCAB_TREE_BYTES ? await env.BLOBS.get(blob.r2_key) : null;
  if (!blob) throw bad(`no finalized upload with blob_sha ${sha} in this tenant (4.3)`, "unknown_vocab_tree");
  if (!obj) throw bad(`blob ${sha} is not a vocabulary tree (${blob.size} bytes, at most ${MAX_VOCAB_TREE_BYTES})`, "not_a_vocab_tree");
  let file: unknown = null;
  try {
    file = JSON.parse(await obj.text());
  } catch {
    // Not JSON: reported below as not a tree.
  }
  const parsed = VocabTreeFile.safeParse(file);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw bad(`blob ${sha} is not a vocabulary tree file (${issue.path.join(".") || "json"}: ${issue.message})`, "not_a_vocab_tree");
  }
  return {
    stage: { kind: "vlad" as const, params: { similarity: { strategy: "vocabtree", tree_blob_sha: sha } } },
    input_blobs: [{ blob_sha: sha, byte_size: blob.size }],
  };
}

/** The chain that builds a dataset's VLAD index for `:build` and queries: the default extraction, then VLAD. */
const vladChain = (): Stage[] => [{ kind: "extract", params: { features: FeaturesSpec.parse({}) } }, VLAD_STAGE];

/** Bumped whenever the bits of a hash computed here change: per-image cache entries are then recomputed. */
const DHASH_CACHE_VERSION = 1;
const imageHashKey = (key: string, upright: boolean) => `${key}/dhash/v${DHASH_CACHE_VERSION}-${upright ? "upright" : "stored"}.txt`;

export interface BuiltIndex {
  index: DhashIndex;
  /** The dataset's image ids by name (the index holds names). */
  ids: Map<string, string>;
  artifact: ArtifactRow;
  /** Computed by this request. */
  built: boolean;
}

const idsByName = (images: ImageRow[]) => new Map(images.map((im) => [im.name, im.image_id]));

/** The file at `path` of the index artifact the task cached under `cacheKey` recorded, with its artifact; null when none. */
async function cachedIndex(
  env: Env,
  tenantId: string,
  cacheKey: string,
  path: string,
): Promise<{ artifact: ArtifactRow; bytes: Uint8Array } | null> {
  const tenant = tenantStore(env, tenantId);
  const cached = await tenant.cachedTask(cacheKey);
  if (!cached) return null;
  const page = unwrap(
    await tenant.listArtifacts({ job_id: cached.job_id }, { task_id: cached.task_id, kind: "features.global.v1" }, { page_size: 1 }),
  );
  const artifact = page.items[0];
  const file = artifact && artifactResource(artifact).files.find((f) => f.path === path);
  if (!artifact || !file) return null;
  const object = await env.BLOBS.get(blobKey(tenantId, file.blob_sha));
  if (!object) return null;
  return { artifact, bytes: new Uint8Array(await object.arrayBuffer()) };
}

/** The dataset's dHash index for its current manifest, or null when none was built. */
export async function findDhashIndex(env: Env, tenantId: string, dataset: DatasetRow, images: ImageRow[]): Promise<BuiltIndex | null> {
  const key = datasetStageCacheKey(env, frozenDataset(dataset, images), DHASH_STAGE);
  const found = await cachedIndex(env, tenantId, key, DHASH_INDEX_PATH);
  return found && { index: decodeDhashIndex(found.bytes), ids: idsByName(images), artifact: found.artifact, built: false };
}

export interface BuiltVladIndex {
  index: VladIndex;
  ids: Map<string, string>;
  artifact: ArtifactRow;
}

/** The dataset's VLAD index for its current manifest, or null when none was built. */
export async function findVladIndex(env: Env, tenantId: string, dataset: DatasetRow, images: ImageRow[]): Promise<BuiltVladIndex | null> {
  const key = datasetChainCacheKey(env, frozenDataset(dataset, images), vladChain());
  const found = await cachedIndex(env, tenantId, key, VLAD_INDEX_PATH);
  return found && { index: decodeVladIndex(found.bytes), ids: idsByName(images), artifact: found.artifact };
}

/**
 * `:build?strategy=vlad` (4.11: 202+LRO): the job of the default extraction and the `vlad` task.
 * With `force` the index of this manifest is forgotten first, so the task computes it again (the
 * extraction stays a cache hit). Capabilities and an empty dataset are checked by the submission.
 */
export async function submitVladBuild(env: Env, tenantId: string, dataset: DatasetRow, o: { force: boolean }): Promise<JobAccepted> {
  const tenant = tenantStore(env, tenantId);
  if (o.force) {
    const images = await tenant.allImages(dataset.dataset_id);
    await tenant.forgetCacheEntry(datasetChainCacheKey(env, frozenDataset(dataset, images), vladChain()));
  }
  const features = FeaturesSpec.parse({});
  return submitOnDataset(env, {
    tenantId,
    dataset,
    recipe: "similarity:build",
    stages: vladChain(),
    capabilities: [`features.extract.${features.type}`, "similarity.vlad"],
    input_artifacts: {},
    roles: { accepted: [], required: [] },
    pipeline: null,
  });
}

/** 4.11 rule 2 and 8: a VLAD query before the build is 404, pointing to `:build`. */
export function vladIndexNotBuilt(dataset: DatasetRow): ApiError {
  return new ApiError(
    404,
    "not_found",
    `no vlad similarity index for this dataset's current images: POST /v1/datasets/${dataset.dataset_id}/similarity:build?strategy=vlad first`,
  );
}

/**
 * The dataset's index, built here when there is none for its manifest (or always, with `force`).
 * 422 for a dataset without images, and for images this Worker cannot decode (each named).
 */
export async function ensureDhashIndex(env: Env, tenantId: string, dataset: DatasetRow, o: { force: boolean }): Promise<BuiltIndex> {
  const tenant = tenantStore(env, tenantId);
  const images = await tenant.allImages(dataset.dataset_id);
  if (images.length === 0) {
    throw validation("the dataset has no registered images: nothing to index", [
      { path: "dataset_id", message: "no registered images", code: "empty_dataset" },
    ]);
  }
  if (!o.force) {
    const found = await findDhashIndex(env, tenantId, dataset, images);
    if (found) return found;
  }
  const hashes = await imageHashes(env.BLOBS, tenantId, images, { upright: dataset.respect_exif_orientation, force: o.force });
  const bytes = encodeDhashIndex(images.map((im, i) => ({ name: im.name, content_sha: im.content_sha, dhash: hashes[i]! })));
  const sha = await sha256Hex(bytes);
  const key = blobKey(tenantId, sha);
  await env.BLOBS.put(key, bytes, { httpMetadata: { contentType: DHASH_INDEX_MEDIA_TYPE } });
  const descriptor = dhashIndexArtifact(
    { path: DHASH_INDEX_PATH, blob_sha: sha, byte_size: bytes.byteLength, media_type: DHASH_INDEX_MEDIA_TYPE },
    images.length,
    dataset.manifest_hash,
  );
  // force: the index built now replaces the one found by the key (the job recording it makes the new entry).
  if (o.force) await tenant.forgetCacheEntry(datasetStageCacheKey(env, frozenDataset(dataset, images), DHASH_STAGE));
  const accepted = await submitJob(env, {
    tenantId,
    projectId: dataset.project_id,
    dataset: frozenDataset(dataset, images),
    recipe: "similarity:build",
    stages: [DHASH_STAGE],
    input_artifacts: {},
    recon: null,
    imported: { artifacts: [descriptor], result: { strategy: "dhash", num_images: images.length } },
    made_blobs: [
      {
        sha,
        r2_key: key,
        size: bytes.byteLength,
        media_type: DHASH_INDEX_MEDIA_TYPE,
        width: null,
        height: null,
        focal_length_35mm: null,
        gps_json: null,
      },
    ],
  });
  const listed = unwrap(await tenant.listArtifacts({ job_id: accepted.job_id }, {}, { page_size: 1 }));
  const artifact = listed.items[0];
  if (!artifact) throw new Error(`the similarity job ${accepted.job_id} recorded no artifact`);
  return { index: decodeDhashIndex(bytes), ids: idsByName(images), artifact, built: true };
}

/** Each image's hash, from its cache entry or its decoded bytes; every image that cannot be decoded here is named in one 422. */
async function imageHashes(
  bucket: R2Bucket,
  tenantId: string,
  images: ImageRow[],
  o: { upright: boolean; force: boolean },
): Promise<string[]> {
  const errors: FieldError[] = [];
  const hashes: string[] = [];
  const computed: { cacheKey: string; hash: string }[] = [];
  for (const [i, im] of images.entries()) {
    const key = blobKey(tenantId, im.content_sha);
    const cacheKey = imageHashKey(key, o.upright);
    const cached = o.force ? null : await bucket.get(cacheKey);
    const text = cached ? await cached.text() : null;
    if (text && Dhash.safeParse(text).success) {
      hashes.push(text);
      continue;
    }
    const decode = im.media_type ? DECODERS[im.media_type] : undefined;
    const problem = (message: string, code: string) => errors.push({ path: `images.${i}`, message: `'${im.name}': ${message}`, code });
    if (!decode) {
      problem(`${im.media_type ?? "not a recognised image"}; dHash is computed from JPEG and PNG images here`, "unsupported_media_type");
      continue;
    }
    if ((im.width ?? 0) * (im.height ?? 0) > MAX_DECODE_PIXELS) {
      problem(
        `more than ${MAX_DECODE_PIXELS} pixels, too many to decode here; a pipeline with retrieval pairs hashes it on a runner`,
        "image_too_large",
      );
      continue;
    }
    const object = await bucket.get(key);
    if (!object) throw notFound(`the bytes of image '${im.name}'`);
    const bytes = await object.arrayBuffer();
    let pixels: ImageData;
    try {
      pixels = await decode(bytes);
    } catch {
      problem("corrupt or truncated image", "undecodable");
      continue;
    }
    if (o.upright) pixels = orient(pixels, await readOrientation(new Uint8Array(bytes)));
    const hash = dhash({ data: pixels.data, width: pixels.width, height: pixels.height, channels: 4 });
    computed.push({ cacheKey, hash });
    hashes.push(hash);
  }
  if (errors.length > 0) throw validation("some images cannot be hashed here; no index was built", errors);
  // Cached only once the whole request succeeds: a rejected build leaves R2 as it found it.
  for (const c of computed) await bucket.put(c.cacheKey, c.hash, { httpMetadata: { contentType: "text/plain" } });
  return hashes;
}

/** `:build`'s answer (4.11: 200 manifest). */
export function similarityManifest(dataset: DatasetRow, built: BuiltIndex): SimilarityManifest {
  return {
    dataset_id: dataset.dataset_id,
    strategy: "dhash",
    manifest_hash: dataset.manifest_hash,
    num_images: built.index.images.length,
    bits: built.index.bits,
    built: built.built,
    artifact_id: built.artifact.artifact_id,
    job_id: built.artifact.job_id,
    created_at: built.artifact.created_at,
    _links: {
      self: { href: `/v1/datasets/${dataset.dataset_id}/similarity:build` },
      artifact: { href: `/v1/artifacts/${built.artifact.artifact_id}` },
      job: { href: `/v1/jobs/${built.artifact.job_id}` },
    },
  };
}

/** The `k` images nearest to `image` (4.11), the query itself first when `includeSelf` (rule 3); the index's names are the dataset's. */
export function dhashNeighbors(built: BuiltIndex, image: ImageRow, k: number, includeSelf: boolean): SimilarityNeighbors {
  const { images } = built.index;
  const at = images.findIndex((im) => im.name === image.name);
  if (at < 0) throw notFound("image in this dataset's similarity index");
  const others = nearestByHamming(
    images.map((im) => im.dhash),
    at,
    includeSelf ? k - 1 : k,
  ).map((n) => ({ image_id: built.ids.get(images[n.index]!.name)!, distance: n.distance }));
  return {
    query_image_id: image.image_id,
    strategy: "dhash",
    k,
    neighbors: includeSelf ? [{ image_id: image.image_id, distance: 0 }, ...others] : others,
  };
}

/** The `k` images nearest to `image` by VLAD (4.11 rule 2: distance max(0, 1 - cosine)), the query first when `includeSelf`. */
export function vladNeighbors(built: BuiltVladIndex, image: ImageRow, k: number, includeSelf: boolean): SimilarityNeighbors {
  const { images, vectors, dim } = built.index;
  const at = images.findIndex((im) => im.name === image.name);
  if (at < 0) throw notFound("image in this dataset's similarity index");
  const others = nearestByCosine(vectors, dim, vectors.subarray(at * dim, (at + 1) * dim), includeSelf ? k - 1 : k, new Set([at])).map(
    (n) => ({ image_id: built.ids.get(images[n.index]!.name)!, distance: n.distance }),
  );
  return {
    query_image_id: image.image_id,
    strategy: "vlad",
    k,
    neighbors: includeSelf ? [{ image_id: image.image_id, distance: 0 }, ...others] : others,
  };
}

/**
 * The similarity index a single matches stage with retrieval pairs reads (2.12: "the dataset must
 * have a built index"): 422 pointing to `:build` when the dataset's current manifest has none. The
 * capabilities are checked first (501 before 422); a dataset without images is left to
 * `submitOnDataset` (7: 422 empty dataset).
 */
export async function retrievalIndex(
  env: Env,
  tenantId: string,
  dataset: DatasetRow,
  pairs: PairsSpec,
): Promise<Record<string, StageArtifact>> {
  if (pairs.strategy !== "retrieval") return {};
  for (const name of pairsCapabilities(pairs)) requireCapability(env, name);
  const images = await tenantStore(env, tenantId).allImages(dataset.dataset_id);
  if (images.length === 0) return {};
  const found =
    pairs.retrieval_strategy === "vlad"
      ? await findVladIndex(env, tenantId, dataset, images)
      : await findDhashIndex(env, tenantId, dataset, images);
  if (!found) {
    const build = `/v1/datasets/${dataset.dataset_id}/similarity:build?strategy=${pairs.retrieval_strategy}`;
    throw validation(
      `retrieval pairs need the dataset's similarity index, and none is built for its current images: POST ${build} first, or run a pipeline (which builds it)`,
      [
        {
          path: "pairs.strategy",
          message: `no ${pairs.retrieval_strategy} index for this dataset's manifest: POST ${build}`,
          code: "index_not_built",
        },
      ],
    );
  }
  return { [RETRIEVAL_INDEX_ROLE]: artifactResource(found.artifact) };
}
