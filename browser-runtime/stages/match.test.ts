import { beforeAll, describe, expect, it } from "vitest";
import { createEngine, type Engine } from "../../engine-wasm/ts/engine";
import { applyHomography, randomBlobs, renderTexture, similarityAbout } from "../../engine-wasm/ts/testing/synthetic-texture";
import { decodeFeatures } from "../../protocol/wire/features";
import { decodeMatches } from "../../protocol/wire/matches";
import { extractFeatures } from "./extract";
import { matchFeatures, matchOptionsFromSpec } from "./match";
import { exhaustivePairs } from "./pairs";

let engine: Engine;
beforeAll(async () => {
  engine = await createEngine();
});

describe("match stage", () => {
  it("maps MatcherSpec types: nn-mutual always cross-checks, nn-ratio follows cross_check", () => {
    expect(matchOptionsFromSpec()).toEqual({ maxRatio: 0.8, maxDistance: 0.7, crossCheck: true });
    expect(matchOptionsFromSpec({ type: "nn-mutual", cross_check: false }).crossCheck).toBe(true);
    expect(matchOptionsFromSpec({ type: "nn-ratio", cross_check: false, max_ratio: 0.9 })).toEqual({
      maxRatio: 0.9,
      maxDistance: 0.7,
      crossCheck: false,
    });
    expect(() => matchOptionsFromSpec({ type: "lightglue" })).toThrow(/not supported/);
  });

  it("turns features artifacts of three views into one matches artifact with correct correspondences", () => {
    const W = 200,
      H = 160;
    const blobs = randomBlobs(W, H, 17);
    const views = {
      v0: similarityAbout(W / 2, H / 2, 0, 1),
      v1: similarityAbout(W / 2, H / 2, 0.3, 0.9),
      v2: similarityAbout(W / 2, H / 2, -0.2, 1.1),
    };
    const features = new Map<string, Uint8Array>();
    for (const [name, view] of Object.entries(views)) {
      const gray = renderTexture(blobs, W, H, view);
      const data = Uint8Array.from(gray, (v) => Math.round(v * 255));
      features.set(name, extractFeatures(engine, { data, width: W, height: H, channels: 1 }).bytes);
    }
    const result = matchFeatures(engine, { features, pairs: exhaustivePairs(["v0", "v1", "v2"]), imageIds: new Map([["v0", "img_0"]]) });
    const pairs = decodeMatches(result.bytes);
    expect(pairs.map((p) => `${p.imageName1}-${p.imageName2}`)).toEqual(["v0-v1", "v0-v2", "v1-v2"]);
    expect(pairs[0]!.imageId1).toBe("img_0");
    const v0 = decodeFeatures(features.get("v0")!);
    for (const p of pairs.slice(0, 2)) {
      const other = decodeFeatures(features.get(p.imageName2)!);
      const h = views[p.imageName2 as "v1" | "v2"];
      let good = 0;
      for (let k = 0; k < p.matches.length; k += 2) {
        const i = 4 * p.matches[k]!,
          j = 4 * p.matches[k + 1]!;
        const [x, y] = applyHomography(h, v0.keypoints[i]!, v0.keypoints[i + 1]!);
        if (Math.hypot(other.keypoints[j]! - x, other.keypoints[j + 1]! - y) < 3) good += 1;
      }
      expect(p.matches.length / 2).toBeGreaterThan(80);
      expect(good / (p.matches.length / 2)).toBeGreaterThan(0.95);
    }
    expect(() => matchFeatures(engine, { features, pairs: [{ imageName1: "v0", imageName2: "nope" }] })).toThrow(/no features/);
  });
});
