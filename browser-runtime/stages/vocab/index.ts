/**
 * @module The retrieval vocabularies the runners ship, trained by scripts/train-vocab.ts on
 * ../shared/datasets/vocab-training. A new training is a new file with a new id (`.vN`): indices
 * record the id they were computed with, so vectors of two codebooks are never compared.
 */
import tree from "./tree-rootsift-b10-l3.v1.json";
import vladK32 from "./vlad-rootsift-k32.v1.json";
import { type Codebook, type CodebookFile, codebookOf } from "../vlad";
import type { VocabTreeFile } from "../../../protocol/wire/bow";
import { type VocabTree, vocabTreeOf } from "../vocab-tree";

/** The codebook VLAD vectors are computed with (32 words x 128 = 4096 dimensions, spec 4.11 rule 2). */
export const DEFAULT_CODEBOOK: Codebook = codebookOf(vladK32 as CodebookFile);

/** The vocabulary tree of `pairs.vocabtree` (10 branches, 3 levels: 1000 words). */
export const DEFAULT_TREE: VocabTree = vocabTreeOf(tree as VocabTreeFile);
