/**
 * @module Untrusted results (runners.md "Trust"): the one place that decides whether a shard
 * computed by a volunteer is accepted. A pool runner's result is held until a runner of another
 * principal (another token, or a trusted runner) computes the same shard and the two agree by a
 * measure with a stated tolerance (float results differ across devices: features are compared
 * by how many keypoints find a counterpart, matches by their common pairs, not by bytes). Two
 * untrusted results that disagree wait for a trusted runner, whose result decides; a result
 * that disagrees with a trusted one, or that breaks the shard's structure, is discarded and its
 * runner's token quarantined. Trusted runners' results (the tenant's own key, the operator's
 * token) are accepted as computed once their structure holds (a broken one fails its task).
 *
 * The JobStore keeps the results and applies the judgement; this module compares (reading the
 * blobs in the Worker, not in the job's single-threaded object) and decides.
 */
import { CORE_ARTIFACT_FORMATS, TaskOutputs } from "../../protocol";
import { compareSift, matchAgreement } from "../../protocol/agreement";
import {
  FEATURES_FORMAT,
  MATCHES_FORMAT,
  VERIFIED_MATCHES_FORMAT,
  VerifiedMatchesFile,
  decodeFeatures,
  decodeMatches,
  readFeaturesHeader,
  validateFeatures,
} from "../../protocol/wire";
import { pairRowsOfText } from "../../protocol/wire/pairs";
import { ApiError, type FieldError, notFound, validation } from "../errors";
import { fieldErrors } from "../router";
import { parseLeaseId } from "../storage/job/leases";
import type { Judgement, LeaseScope, ShardContext, ShardResult } from "../storage/job-rows";
import type { PairListContext } from "../storage/job/pair-list";
import { blobKey } from "./blobs";
import { isPairListResult, planPairListBlocks } from "./pair-list";
import { dispatcher, failure, jobStore, unwrap } from "./stores";

/** The validation policy, from the deployment's vars (docs/operations.md). */
export interface ValidationPolicy {
  /** Share of untrusted shard results confirmed by a second runner (`SVC_POOL_VALIDATION_RATE`, 0..1). */
  rate: number;
  /** Confirmed results a token needs before the rate applies to it; until then all its results are (`SVC_POOL_VALIDATION_TRUST_AFTER`). */
  trustAfter: number;
  /** Keypoints of each result that must have a counterpart in the other (`SVC_VALIDATION_KEYPOINT_AGREEMENT`). */
  keypointAgreement: number;
  /** Largest mean L1 distance of paired descriptors (`SVC_VALIDATION_DESCRIPTOR_L1`). */
  descriptorL1: number;
  /** Jaccard index of two match lists, or of two verifications' inlier lists (`SVC_VALIDATION_MATCH_AGREEMENT`). */
  matchAgreement: number;
}

const fraction = (v: string | undefined, d: number) => {
  const n = Number(v);
  return v !== undefined && v !== "" && Number.isFinite(n) && n >= 0 && n <= 1 ? n : d;
};

export function validationPolicy(env: Env): ValidationPolicy {
  const vars = env as unknown as Record<string, string | undefined>;
  const l1 = Number(vars.SVC_VALIDATION_DESCRIPTOR_L1);
  return {
    rate: fraction(vars.SVC_POOL_VALIDATION_RATE, 1),
    trustAfter: /^\d+$/.test(vars.SVC_POOL_VALIDATION_TRUST_AFTER ?? "") ? Number(vars.SVC_POOL_VALIDATION_TRUST_AFTER) : 20,
    // WGSL and WASM SIFT pair >= 98% of keypoints on photos, mean descriptor L1 < 2 (browser-runtime/gpu/sift-gpu.test.ts).
    keypointAgreement: fraction(vars.SVC_VALIDATION_KEYPOINT_AGREEMENT, 0.95),
    descriptorL1: Number.isFinite(l1) && l1 > 0 ? l1 : 16,
    matchAgreement: fraction(vars.SVC_VALIDATION_MATCH_AGREEMENT, 0.9),
  };
}

/** Whether two results agree, and the measure that says so. */
export interface Agreement {
  agrees: boolean;
  measure: string;
}

type Read = (sha: string) => Promise<Uint8Array>;

/** Compares two results of one shard item by item (same order, one file each: the JobStore checked their structure). */
export async function compareOutputs(read: Read, a: TaskOutputs, b: TaskOutputs, policy: ValidationPolicy): Promise<Agreement> {
  if (a.artifacts.length !== b.artifacts.length) return { agrees: false, measure: "different numbers of items" };
  let identical = 0;
  for (const [i, x] of a.artifacts.entries()) {
    const y = b.artifacts[i]!;
    const [fa, fb] = [x.files[0]!, y.files[0]!];
    if (x.artifact_format !== y.artifact_format)
      return { agrees: false, measure: `${fa.path}: formats ${x.artifact_format} and ${y.artifact_format}` };
    if (fa.blob_sha === fb.blob_sha) {
      identical++;
      continue;
    }
    const item = await compareFiles(x.artifact_format, await read(fa.blob_sha), await read(fb.blob_sha), policy).catch((e: unknown) => ({
      agrees: false,
      measure: `undecodable (${e instanceof Error ? e.message : String(e)})`,
    }));
    if (!item.agrees) return { agrees: false, measure: `${fa.path}: ${item.measure}` };
  }
  return {
    agrees: true,
    measure:
      identical === a.artifacts.length ? "identical bytes" : `within tolerance (${identical} of ${a.artifacts.length} items identical)`,
  };
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

/** One item's two files, by the measure of their format; a format without a tolerance must match byte for byte. */
async function compareFiles(format: string, a: Uint8Array, b: Uint8Array, policy: ValidationPolicy): Promise<Agreement> {
  if (format === FEATURES_FORMAT) {
    const [fa, fb] = [decodeFeatures(a), decodeFeatures(b)];
    if (
      fa.imageWidth !== fb.imageWidth ||
      fa.imageHeight !== fb.imageHeight ||
      fa.descriptorDim !== fb.descriptorDim ||
      fa.descriptorKind !== fb.descriptorKind
    ) {
      return { agrees: false, measure: "different image sizes or descriptor layouts" };
    }
    const s = compareSift(fa, fb);
    const agreement = Math.min(s.matchedA, s.matchedB);
    const agrees = agreement >= policy.keypointAgreement && s.meanDescriptorL1 <= policy.descriptorL1;
    return {
      agrees,
      measure: `${pct(agreement)} of keypoints agree (${policy.keypointAgreement * 100}% needed), mean descriptor L1 ${s.meanDescriptorL1.toFixed(1)} (at most ${policy.descriptorL1})`,
    };
  }
  if (format === MATCHES_FORMAT) {
    const pairs = (bytes: Uint8Array) => new Map(decodeMatches(bytes).map((p) => [`${p.imageName1}\u0000${p.imageName2}`, p.matches]));
    return jaccard(pairs(a), pairs(b), "matches", policy);
  }
  if (format === VERIFIED_MATCHES_FORMAT) {
    const pairs = (bytes: Uint8Array) =>
      new Map(
        VerifiedMatchesFile.parse(JSON.parse(new TextDecoder().decode(bytes))).pairs.map((p) => [
          `${p.image_id1}-${p.image_id2}-${p.type}`,
          Uint32Array.from(p.inlier_matches.flat()),
        ]),
      );
    return jaccard(pairs(a), pairs(b), "inlier matches", policy);
  }
  return { agrees: false, measure: `the bytes differ and ${format} has no tolerance` };
}

/** Common matches over all pairs (a pair one side lacks counts all its matches as disagreeing). */
function jaccard(a: Map<string, Uint32Array>, b: Map<string, Uint32Array>, what: string, policy: ValidationPolicy): Agreement {
  let both = 0;
  let union = 0;
  for (const key of new Set([...a.keys(), ...b.keys()])) {
    const [x, y] = [a.get(key) ?? new Uint32Array(), b.get(key) ?? new Uint32Array()];
    const n = x.length / 2 + y.length / 2;
    const j = matchAgreement(x, y);
    // matchAgreement = common / union, so common = j * n / (1 + j).
    const common = (j * n) / (1 + j);
    both += common;
    union += n - common;
  }
  const agreement = union ? both / union : 1;
  return {
    agrees: agreement >= policy.matchAgreement,
    measure: `${pct(agreement)} of ${what} agree (${policy.matchAgreement * 100}% needed)`,
  };
}

type ReadHead = (sha: string) => Promise<{ head: Uint8Array; size: number }>;

/**
 * The structure of a shard result's files against its shard, read before anything is
 * recorded: features decode, with the keypoint count their summary states; every matched or
 * verified pair joins two images of the item's block, with keypoint indices inside those images'
 * features, and so does every pair of a block's pair list. Formats other than the core ones are left
 * to the comparison (byte for byte). A trusted result's features are read by their 32-byte header
 * only (`headerOnly`: the count against the summary, the size against count and descriptor
 * dimension), not whole: a features file is large, and a trusted runner is checked for mistakes,
 * not forgeries.
 */
export async function structureErrors(
  read: Read,
  readHead: ReadHead,
  context: ShardContext,
  outputs: TaskOutputs,
  { headerOnly = false }: { headerOnly?: boolean } = {},
): Promise<FieldError[]> {
  const featureShas = new Map(context.features.map((f) => [f.name, f.blob_sha]));
  const counts = new Map<string, Promise<number | null>>();
  const keypoints = (name: string) => {
    const sha = featureShas.get(name);
    if (!counts.has(name))
      counts.set(name, sha ? readHead(sha).then(({ head, size }) => readFeaturesHeader(head, size).count) : Promise.resolve(null));
    return counts.get(name)!;
  };
  const errors: FieldError[] = [];
  for (const [i, artifact] of outputs.artifacts.entries()) {
    // A match shard's pair lists follow its items' matches, in item order.
    const item = context.items[i % context.items.length]!;
    const file = artifact.files[0]!;
    const path = `outputs_ref.artifacts.${i}.files.0`;
    const inBlock = (a: string, b: string) => {
      if (!item.block) return item.images.includes(a) && item.images.includes(b);
      const [g, h] = item.block;
      return (g.includes(a) && h.includes(b)) || (h.includes(a) && g.includes(b));
    };
    const checkPair = async (a: string, b: string, indices: ArrayLike<number>): Promise<FieldError | null> => {
      if (!inBlock(a, b)) return { path, message: `the pair ${a} ${b} is not in the item's block`, code: "outside_block" };
      const [na, nb] = [await keypoints(a), await keypoints(b)];
      for (let k = 0; k + 1 < indices.length; k += 2) {
        if ((na !== null && indices[k]! >= na) || (nb !== null && indices[k + 1]! >= nb))
          return { path, message: `a match of ${a} ${b} indexes past their keypoints`, code: "index_range" };
      }
      return null;
    };
    try {
      if (artifact.artifact_format === FEATURES_FORMAT) {
        const header = headerOnly
          ? await readHead(file.blob_sha).then(({ head, size }) => readFeaturesHeader(head, size))
          : validateFeatures(await read(file.blob_sha));
        const stated = artifact.summary.num_keypoints;
        if (typeof stated === "number" && stated !== header.count)
          errors.push({ path, message: `the file has ${header.count} keypoints, the summary says ${stated}`, code: "summary_mismatch" });
      } else if (artifact.artifact_format === MATCHES_FORMAT) {
        for (const p of decodeMatches(await read(file.blob_sha))) {
          const e = await checkPair(p.imageName1, p.imageName2, p.matches);
          if (e) {
            errors.push(e);
            break;
          }
        }
      } else if (artifact.artifact_format === CORE_ARTIFACT_FORMATS["pairs.image_names.v1"]) {
        for (const row of pairRowsOfText(new TextDecoder("utf-8", { fatal: true }).decode(await read(file.blob_sha)))) {
          const e = row.names.length === 2 ? await checkPair(row.names[0]!, row.names[1]!, []) : null;
          if (e || row.names.length !== 2) {
            errors.push(e ?? { path, message: `line ${row.row}: expected two image names`, code: "malformed_pair_row" });
            break;
          }
        }
      } else if (artifact.artifact_format === VERIFIED_MATCHES_FORMAT) {
        const parsed = VerifiedMatchesFile.parse(JSON.parse(new TextDecoder().decode(await read(file.blob_sha))));
        const names = new Map(parsed["x-images"].map((im) => [im.image_id, im.name]));
        for (const p of parsed.pairs) {
          const [a, b] = [names.get(p.image_id1), names.get(p.image_id2)];
          const e =
            a && b
              ? await checkPair(a, b, p.inlier_matches.flat())
              : { path, message: `pair ${p.image_id1} ${p.image_id2} names an image not in x-images`, code: "outside_block" };
          if (e) {
            errors.push(e);
            break;
          }
        }
      }
    } catch (e) {
      errors.push({
        path,
        message: `the file does not decode as ${artifact.artifact_format}: ${e instanceof Error ? e.message : String(e)}`,
        code: "invalid_file",
      });
    }
  }
  return errors;
}

/** Reads a tenant's blobs whole, or their first 32 bytes and size (a features header; memoised: a batch's match shards share images). */
function blobReaders(env: Env, tenant: string): { read: Read; readHead: ReadHead } {
  const heads = new Map<string, ReturnType<ReadHead>>();
  return {
    read: async (sha) => {
      const object = await env.BLOBS.get(blobKey(tenant, sha));
      if (!object) throw new Error(`blob ${sha} is missing`);
      return new Uint8Array(await object.arrayBuffer());
    },
    readHead: (sha) => {
      if (!heads.has(sha))
        heads.set(
          sha,
          env.BLOBS.get(blobKey(tenant, sha), { range: { offset: 0, length: 32 } }).then(async (object) => {
            if (!object) throw new Error(`blob ${sha} is missing`);
            return { head: new Uint8Array(await object.arrayBuffer()), size: object.size };
          }),
        );
      return heads.get(sha)!;
    },
  };
}

/** A compared result: the runner's, with how it agrees with each earlier open result of the shard. */
export type Compared = ShardResult & { agreement: Agreement };

const who = (r: ShardResult) => `${r.trusted ? "trusted" : "untrusted"} runner ${r.runner_id}`;

/**
 * The decision rules. A trusted result decides: it is used, the results agreeing with it are
 * confirmations, the others wrong. An untrusted result agreeing with an open one of another
 * principal confirms it (the earlier is used); disagreeing, both wait for a trusted runner.
 */
export function decide(shardId: string, result: ShardResult, others: Compared[]): Judgement {
  if (result.trusted) {
    const wrong = others.filter((o) => !o.agreement.agrees);
    return {
      verdicts: [
        { result_id: result.result_id, verdict: "validated" },
        ...others.map((o) => ({ result_id: o.result_id, verdict: o.agreement.agrees ? ("agreed" as const) : ("rejected" as const) })),
      ],
      use: result.result_id,
      need: "any",
      warnings: wrong.map(
        (o) =>
          `shard ${shardId}: the result of ${who(o)} disagrees with ${who(result)}'s (${o.agreement.measure}); it is discarded and the runner quarantined`,
      ),
    };
  }
  const confirmed = others.find((o) => o.agreement.agrees);
  if (confirmed) {
    return {
      verdicts: [
        { result_id: confirmed.result_id, verdict: "validated" },
        { result_id: result.result_id, verdict: "agreed" },
      ],
      use: confirmed.result_id,
      need: "any",
      warnings: [],
    };
  }
  return {
    verdicts: [{ result_id: result.result_id, verdict: "candidate" }],
    use: null,
    need: "trusted",
    warnings: others.map(
      (o) => `shard ${shardId}: the results of ${who(o)} and ${who(result)} disagree (${o.agreement.measure}); a trusted runner decides`,
    ),
  };
}

/** Whether an untrusted result is held for a replica: always while its token has fewer confirmed results than `trustAfter` (BOINC's adaptive replication), then at `rate`. */
export const replicates = (policy: ValidationPolicy, confirmed: number, draw: number) =>
  confirmed < policy.trustAfter || draw < policy.rate;

/**
 * Completes a lease (the `:complete` route's service): the JobStore records or holds the result;
 * when the shard already holds one, the two are compared here and judged; a wrong or broken
 * untrusted result quarantines its runner's token, a confirmed one counts for it. Answers the runner's id.
 */
export async function completeLease(
  env: Env,
  { tenant, job, leaseId, scope, confirmed }: { tenant: string; job: string; leaseId: string; scope: LeaseScope; confirmed: number },
  outputs: TaskOutputs,
): Promise<string> {
  const store = jobStore(env, tenant, job);
  const policy = validationPolicy(env);
  const replicate = scope.pool && replicates(policy, confirmed, Math.random());
  const { read, readHead } = blobReaders(env, tenant);
  // Every shard result's files are read against its shard first; a trusted runner's features by their headers only.
  // A trusted result refused here fails its task (2.11 rule 3), as a wrong size does; only a volunteer's is requeued and quarantined.
  // (Cast: RPC typing widens the block tuple.)
  const context = unwrap(await store.shardContext(leaseId, scope)) as ShardContext | null;
  const refused = context ? await structureErrors(read, readHead, context, outputs, { headerOnly: !scope.pool }) : [];
  // A chosen pair list: the blocks that hold its pairs are planned here and added with it (services/pair-list.ts).
  const listContext = isPairListResult(outputs) ? (unwrap(await store.pairListContext(leaseId, scope)) as PairListContext | null) : null;
  const listed = listContext ? await planPairListBlocks(env, { tenant, job }, listContext, outputs) : null;
  const completion = unwrap(
    await store.complete(leaseId, scope, outputs, { replicate, refused: [...refused, ...(listed?.errors ?? [])], blocks: listed?.blocks }),
  );
  if (completion.state === "rejected") {
    await dispatcher(env, "pool").quarantine(
      completion.principal,
      `its result of runner ${completion.runner_id} for shard ${completion.shard_id} of job ${job} broke the shard's structure (${completion.errors[0]!.message})`,
    );
    throw validation(
      "outputs_ref rejected: the result is discarded, the shard computed again and this runner's token quarantined",
      completion.errors,
    );
  }
  if (completion.state !== "compare") return completion.runner_id;
  const others = await Promise.all(
    completion.others.map(async (o) => ({ ...o, agreement: await compareOutputs(read, o.outputs, completion.result.outputs, policy) })),
  );
  const judgement = decide(completion.shard_id, completion.result, others);
  // Quarantined before the judgement is recorded: a Worker dying in between leaves the result unjudged (the lease lapses), never the liar free.
  const compared = [completion.result, ...others];
  for (const v of judgement.verdicts) {
    const r = compared.find((c) => c.result_id === v.result_id)!;
    if (v.verdict === "rejected" && !r.trusted) {
      const measure = others.find((o) => o.result_id === r.result_id)?.agreement.measure ?? "";
      await dispatcher(env, "pool").quarantine(
        r.principal,
        `its result of runner ${r.runner_id} for shard ${completion.shard_id} of job ${job} disagreed with trusted runner ${completion.runner_id}'s (${measure})`,
      );
    }
  }
  unwrap(await store.judge(leaseId, scope, completion.result.result_id, judgement));
  for (const v of judgement.verdicts) {
    const r = compared.find((c) => c.result_id === v.result_id)!;
    if ((v.verdict === "validated" || v.verdict === "agreed") && !r.trusted) await dispatcher(env, "pool").credit(r.principal);
  }
  return completion.runner_id;
}

/**
 * Completes several leases of one runner in one request (`POST /v1/runners/{rid}:complete_leases`,
 * runners.md "Batching"), each as its own `:complete` would be: a malformed `outputs_ref` fails its
 * task, a pool runner's results are weighed one by one (completeLease), a trusted runner's are read
 * against their shards (each job's contexts in one call) and go to each job's JobStore in one call,
 * which tells the job's change once for all of them. Answers each
 * lease's refusal, or null where it completed, in order: one refusal leaves the others standing.
 */
export async function completeLeases(
  env: Env,
  who: { runnerId: string; tenant: string | null; scope: LeaseScope; confirmed: number },
  completions: { lease_id: string; outputs_ref: unknown }[],
): Promise<(ApiError | null)[]> {
  const refusals: (ApiError | null)[] = completions.map(() => null);
  const byJob = new Map<string, { tenant: string; job: string; at: number[]; entries: { lease_id: string; outputs: TaskOutputs }[] }>();
  for (const [i, { lease_id: leaseId, outputs_ref }] of completions.entries()) {
    const where = parseLeaseId(leaseId);
    // A tenant's runner reaches only its tenant's leases (services/runners.ts leaseStore).
    if (!where || (who.tenant !== null && where.tenant !== who.tenant)) {
      refusals[i] = notFound("lease");
      continue;
    }
    const store = jobStore(env, where.tenant, where.job);
    const parsed = TaskOutputs.safeParse(outputs_ref);
    if (!parsed.success) {
      // A malformed result fails the task (2.11 rule 3), as on :complete.
      const errors = fieldErrors(parsed.error, `completions.${i}.outputs_ref`);
      const failed = await store.fail(leaseId, who.scope, {
        error_class: "ValidationError",
        message: "the task's outputs_ref is invalid",
        detail: { errors },
      });
      refusals[i] = failed.ok ? validation("outputs_ref rejected; the task failed with a validation error", errors) : failure(failed);
      continue;
    }
    // A pool runner's result is weighed on its own, and a chosen pair list has its blocks planned (services/pair-list.ts).
    if (who.scope.pool || isPairListResult(parsed.data)) {
      refusals[i] = await completeLease(
        env,
        { tenant: where.tenant, job: where.job, leaseId, scope: who.scope, confirmed: who.confirmed },
        parsed.data,
      ).then(
        () => null,
        (e: unknown) => {
          if (e instanceof ApiError) return e;
          throw e;
        },
      );
      continue;
    }
    const key = `${where.tenant}/${where.job}`;
    const group = byJob.get(key) ?? { tenant: where.tenant, job: where.job, at: [], entries: [] };
    group.at.push(i);
    group.entries.push({ lease_id: leaseId, outputs: parsed.data });
    byJob.set(key, group);
  }
  for (const g of byJob.values()) {
    const store = jobStore(env, g.tenant, g.job);
    // The batch's shard contexts in one call, its files read here (features by their headers), then one call records them all.
    const contexts = (await store.shardContexts(
      g.entries.map((e) => e.lease_id),
      who.scope,
    )) as (ShardContext | null)[];
    const { read, readHead } = blobReaders(env, g.tenant);
    const checked = await Promise.all(
      g.entries.map(async (e, k) => ({
        ...e,
        refused: contexts[k] ? await structureErrors(read, readHead, contexts[k], e.outputs, { headerOnly: true }) : [],
      })),
    );
    const outcomes = await store.completeMany(who.runnerId, who.scope, checked);
    outcomes.forEach((o, k) => {
      if (!o.ok) refusals[g.at[k]!] = failure(o);
    });
  }
  return refusals;
}
