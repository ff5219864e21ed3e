/**
 * When the map executor keeps a global model and when `use_incremental_quality_fallback` maps again incrementally;
 * the parts of the view graph it maps one by one.
 */
import { describe, expect, it } from "vitest";
import { connectedImages, globalModelShortfall } from "./map";

describe("globalModelShortfall", () => {
  it("keeps a model holding at least 80% of the images that can register, at 2 px or less", () => {
    expect(globalModelShortfall(123, 123, 0.65)).toBeNull();
    expect(globalModelShortfall(80, 100, 2)).toBeNull();
  });

  it("says why a model is poor: no model, too few images, or too large an error", () => {
    expect(globalModelShortfall(1, 10, 0.5)).toBe("no model");
    expect(globalModelShortfall(79, 100, 0.5)).toBe("79 of 100 images registered (under 80%)");
    expect(globalModelShortfall(100, 100, 2.5)).toBe("mean reprojection error 2.50 px (over 2 px)");
    expect(globalModelShortfall(100, 100, Infinity)).toMatch(/over 2 px/);
  });
});

describe("connectedImages", () => {
  it("answers the connected parts of the pairs' graph, largest first; images on no pair are in none", () => {
    const pair = (image1: number, image2: number) => ({ image1, image2 });
    // Two places: 0-1-2-3 (a chain, then a loop back) and 5-7-8; image 4 on no pair; 6-9 a stray pair.
    const pairs = [pair(0, 1), pair(1, 2), pair(2, 3), pair(3, 0), pair(7, 5), pair(8, 7), pair(6, 9)];
    expect(connectedImages(pairs)).toEqual([
      [0, 1, 2, 3],
      [5, 7, 8],
      [6, 9],
    ]);
    expect(connectedImages([])).toEqual([]);
  });
});
