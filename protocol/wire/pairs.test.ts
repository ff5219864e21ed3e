import { describe, expect, it } from "vitest";
import { MAX_PAIR_LIST_ERRORS, explicitPairs, pairRowsOfList, pairRowsOfText } from "./pairs";

const NAMES = ["a.jpg", "b.jpg", "c.jpg", "dir/d.jpg"];

describe("explicit pair lists (2.12 image_name_pairs_txt, image_pairs)", () => {
  it("reads rows by line, skipping blank lines and # comments, with spaces, tabs and CRLF", () => {
    const rows = pairRowsOfText("# pairs\r\na.jpg b.jpg\r\n\n  c.jpg\tdir/d.jpg  \nb.jpg a.jpg\n");
    expect(rows).toEqual([
      { row: 2, names: ["a.jpg", "b.jpg"] },
      { row: 4, names: ["c.jpg", "dir/d.jpg"] },
      { row: 5, names: ["b.jpg", "a.jpg"] },
    ]);
    // Duplicates (a b, b a) are one pair, (i, j) with i < j in dataset order, row-major.
    expect(explicitPairs(NAMES, rows)).toEqual({
      pairs: [
        [0, 1],
        [2, 3],
      ],
      errors: [],
      error_count: 0,
    });
    const list = pairRowsOfList([
      { image_name1: "dir/d.jpg", image_name2: "a.jpg" },
      { image_name1: "c.jpg", image_name2: "a.jpg" },
      { image_name1: "a.jpg", image_name2: "dir/d.jpg" },
    ]);
    expect(explicitPairs(NAMES, list).pairs).toEqual([
      [0, 2],
      [0, 3],
    ]);
  });

  it("names each malformed row, unknown name and self pair by its line or index", () => {
    const { pairs, errors, error_count } = explicitPairs(
      NAMES,
      pairRowsOfText("a.jpg b.jpg c.jpg\nb.jpg\na.jpg x.jpg\nc.jpg c.jpg\nb.jpg c.jpg\n"),
    );
    expect(pairs).toEqual([[1, 2]]);
    expect(error_count).toBe(4);
    expect(errors.map((e) => [e.row, e.field, e.code])).toEqual([
      [1, null, "malformed_pair_row"],
      [2, null, "malformed_pair_row"],
      [3, "image_name2", "unknown_image"],
      [4, null, "self_pair"],
    ]);
    expect(errors[2]!.message).toContain("'x.jpg'");
    const list = explicitPairs(NAMES, pairRowsOfList([{ image_name1: "y", image_name2: "a.jpg" }]));
    expect(list.errors).toEqual([{ row: 0, field: "image_name1", code: "unknown_image", message: "no image named 'y' in the dataset" }]);
  });

  it("lists the first errors of a long bad list and counts them all", () => {
    const text = Array.from({ length: 50 }, (_, i) => `a.jpg missing-${i}.jpg`).join("\n");
    const { errors, error_count } = explicitPairs(NAMES, pairRowsOfText(text));
    expect(errors).toHaveLength(MAX_PAIR_LIST_ERRORS);
    expect(error_count).toBe(50);
  });
});
