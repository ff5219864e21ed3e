import { beforeAll, describe, expect, it } from "vitest";
import { type Engine, loadEngine } from "../../engine-wasm/ts/engine";
import { IncrementalMapping } from "../../engine-wasm/ts/mapping";
import { syntheticMappingInput } from "../../engine-wasm/ts/testing/synthetic-scenes";
import { decodePoints } from "../../protocol/wire/points";
import { mappedModelOf, modelFiles } from "./snapshot";

/** Each point's track as its sorted "image:keypoint" elements. */
function trackSets(tracks: Int32Array): string[][] {
  const out: string[][] = [];
  for (let k = 0; k < tracks.length; k += 1 + 2 * tracks[k]!) {
    out.push(Array.from({ length: tracks[k]! }, (_, e) => `${tracks[k + 1 + 2 * e]}:${tracks[k + 2 + 2 * e]}`).sort());
  }
  return out;
}

describe("a snapshot model back in the mapper's terms (mappedModelOf)", () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await loadEngine();
  });

  it("gives back what modelFiles sealed, and the engine continues from it (the hierarchical merge's final pass)", () => {
    const input = syntheticMappingInput();
    const names = input.images.map((_, i) => `img${i}.jpg`);
    const images = input.images.map((im, i) => ({ name: names[i]!, camera: im.camera, keypoints: im.keypoints }));
    const first = new IncrementalMapping(engine, input, { seed: 3, init_min_tri_angle: 8, min_model_size: 3 });
    const model = first.run()[0]!;
    first.free();
    const files = modelFiles(model, images);
    const snapshot = { cameras: files.cameras, images: files.images, points: decodePoints(files.points) };
    const back = mappedModelOf(snapshot, input.cameras, (name) => names.indexOf(name));
    expect(back.images).toEqual(model.images);
    expect(back.cameras.map((c) => c.params)).toEqual(model.cameras.map((c) => c.params));
    // The same tracks (points in id order, each track's elements in any order; float32 positions as sealed).
    expect(trackSets(back.tracks)).toEqual(trackSets(model.tracks));
    back.points.forEach((x, i) => expect(x).toBeCloseTo(model.points[i]!, 4));
    expect(() => mappedModelOf(snapshot, input.cameras, () => undefined)).toThrow(/not in the mapping input/);

    // Without two of its photos (a cluster that lost them), the engine registers them into it again.
    const lost = {
      ...snapshot,
      images: { images: snapshot.images.images.filter((im) => im.name !== "img0.jpg" && im.name !== "img5.jpg") },
    };
    const mapping = new IncrementalMapping(engine, input, { seed: 3, multiple_models: false });
    mapping.extend(mappedModelOf(lost, input.cameras, (name) => names.indexOf(name)));
    const extended = mapping.run();
    mapping.free();
    expect(extended).toHaveLength(1);
    expect(extended[0]!.images.map((im) => im.image).sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(extended[0]!.meanReprojectionError).toBeLessThan(0.5);
  });
});
