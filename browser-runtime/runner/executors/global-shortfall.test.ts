/** When the map executor keeps a global model and when `use_incremental_quality_fallback` maps again incrementally. */
import { describe, expect, it } from "vitest";
import { globalModelShortfall } from "./map";

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
