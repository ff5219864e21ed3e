/**
 * @module The retrieval vocabularies the runners ship, trained by scripts/train-vocab.ts on
 * ../shared/datasets/vocab-training. A new training is a new file with a new id (`.vN`): indices
 * record the id they were computed with, so vectors of two codebooks are never compared.
 */
import vladK32 from "./vlad-rootsift-k32.v1.json";
import { type Codebook, type CodebookFile, codebookOf } from "../vlad";

/** The codebook VLAD vectors are computed with (32 words x 128 = 4096 dimensions, spec 4.11 rule 2). */
export const DEFAULT_CODEBOOK: Codebook = codebookOf(vladK32 as CodebookFile);
