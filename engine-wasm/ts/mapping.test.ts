import { beforeAll, describe, expect, it } from "vitest";
import { loadEngine, type Engine } from "./engine";
import { IncrementalMapping, extendModel, point3DIdsOfImage } from "./mapping";
import { syntheticMappingInput } from "./testing/synthetic-scenes";

const OPTIONS = { seed: 3, init_min_tri_angle: 8, min_model_size: 3 };

describe("incremental mapping binding", () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await loadEngine();
  });

  it("maps a synthetic scene from uncalibrated cameras, with snapshots", () => {
    const input = syntheticMappingInput();
    const mapping = new IncrementalMapping(engine, input, { ...OPTIONS, snapshot_frames_freq: 2 });
    const snapshots: number[] = [];
    const models = mapping.run((m) => snapshots.push(m.numRegistrations));
    mapping.free();
    expect(models).toHaveLength(1);
    const model = models[0]!;
    expect(model.images.map((im) => im.image).sort()).toEqual([0, 1, 2, 3, 4, 5]);
    // One snapshot each time the registration count reaches a new multiple of 2 (an
    // initial pair adds two at once; a filtered image registered again counts again).
    expect(snapshots.length).toBeGreaterThanOrEqual(3);
    snapshots.forEach((n, i) => {
      if (i > 0) expect(Math.floor(n / 2)).toBeGreaterThan(Math.floor(snapshots[i - 1]! / 2));
    });
    expect(model.meanReprojectionError).toBeLessThan(0.5);
    expect(model.cameras[0]!.params[0]).toBeCloseTo(700, -1);
    expect(model.points.length / 3).toBeGreaterThan(250);
    // Every track element points back to its point.
    const ids = point3DIdsOfImage(model, 0, input.images[0]!.keypoints.length / 2);
    expect(ids.filter((id) => id >= 0).length).toBeGreaterThan(150);
  });

  it("reports progress that never reads finished while work remains, and finishes early on request", () => {
    const input = syntheticMappingInput();
    const mapping = new IncrementalMapping(engine, input, OPTIONS);
    expect(mapping.progress()).toEqual({ phase: "start_model", imagesHeld: 0, imagesReachable: 6 });
    const phases = new Set<string>();
    for (;;) {
      const p = mapping.progress();
      phases.add(p.phase);
      if (mapping.step(1) === "done") break;
      expect(p.imagesHeld).toBeLessThanOrEqual(p.imagesReachable);
    }
    expect(mapping.progress()).toEqual({ phase: "done", imagesHeld: 6, imagesReachable: 6 });
    expect([...phases]).toEqual(["start_model", "grow_model", "finish_model"]);
    mapping.free();

    const early = new IncrementalMapping(engine, input, OPTIONS);
    early.step(2);
    const held = early.progress().imagesHeld;
    early.requestFinish();
    expect(early.progress().phase).toBe("finish_model");
    const models = early.run();
    expect(models).toHaveLength(1);
    expect(models[0]!.images).toHaveLength(held);
    early.free();
  });

  it("resumes from a checkpoint to the same result", () => {
    const input = syntheticMappingInput();
    const straight = new IncrementalMapping(engine, input, OPTIONS);
    const expected = straight.run();
    straight.free();
    const first = new IncrementalMapping(engine, input, OPTIONS);
    expect(first.step(2)).toBe("running");
    const bytes = first.checkpoint();
    first.free();
    const resumed = new IncrementalMapping(engine, input, OPTIONS);
    resumed.restore(bytes);
    const models = resumed.run();
    expect(() => resumed.restore(bytes.slice(0, 10))).toThrow(/checkpoint/);
    resumed.free();
    expect(models[0]!.images.map((im) => im.image)).toEqual(expected[0]!.images.map((im) => im.image));
    for (let i = 0; i < models[0]!.images.length; i += 1) {
      for (let c = 0; c < 3; c += 1) expect(models[0]!.images[i]!.tvec[c]).toBeCloseTo(expected[0]!.images[i]!.tvec[c]!, 6);
    }
  });

  it("extends a given model instead of starting one: the images it lacks are registered into it, in its frame", () => {
    const input = syntheticMappingInput();
    const full = new IncrementalMapping(engine, input, OPTIONS);
    const whole = full.run()[0]!;
    full.free();
    // The model without images 4 and 5 (as a hierarchical cluster may lose them); their track elements stay and are left out.
    const seed = { ...whole, images: whole.images.filter((im) => im.image < 4) };
    const mapping = new IncrementalMapping(engine, input, { ...OPTIONS, multiple_models: false });
    const leftOut = mapping.extend(seed);
    let elements = 0;
    for (let k = 0; k < whole.tracks.length; k += 1 + 2 * whole.tracks[k]!) {
      for (let e = 0; e < whole.tracks[k]!; e += 1) elements += whole.tracks[k + 1 + 2 * e]! >= 4 ? 1 : 0;
    }
    expect(leftOut).toBeGreaterThanOrEqual(elements);
    expect(mapping.progress()).toEqual({ phase: "grow_model", imagesHeld: 4, imagesReachable: 6 });
    expect(mapping.models()[0]!.images.map((im) => im.image)).toEqual(seed.images.map((im) => im.image));
    expect(() => mapping.extend(seed)).toThrow(/started already/);
    const models = mapping.run();
    mapping.free();
    expect(models).toHaveLength(1);
    expect(models[0]!.images.map((im) => im.image).sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(models[0]!.meanReprojectionError).toBeLessThan(0.5);
    // Continued, not started again: the seed's poses stay where they were.
    for (const im of seed.images) {
      const now = models[0]!.images.find((m) => m.image === im.image)!;
      for (let c = 0; c < 3; c += 1) expect(now.tvec[c]).toBeCloseTo(im.tvec[c]!, 2);
    }

    const bad = new IncrementalMapping(engine, input, OPTIONS);
    expect(() => bad.extend({ ...seed, images: [{ image: 9, qvec: [1, 0, 0, 0], tvec: [0, 0, 0] }] })).toThrow(/image index out of range/);
    bad.free();
  });

  it("extendModel: grows a model by the images it lacks, calling back before each step", async () => {
    const input = syntheticMappingInput();
    const full = new IncrementalMapping(engine, input, OPTIONS);
    const whole = full.run()[0]!;
    full.free();
    const phases: string[] = [];
    const model = await extendModel(engine, input, OPTIONS, { ...whole, images: whole.images.filter((im) => im.image < 4) }, (m) => {
      phases.push(m.progress().phase);
    });
    expect(model!.images.map((im) => im.image).sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(phases[0]).toBe("grow_model");
    expect(phases).toContain("finish_model");
  });

  it("rejects invalid input, naming the rule (degenerate.test.ts has the others)", () => {
    const input = syntheticMappingInput();
    expect(() => new IncrementalMapping(engine, { ...input, pairs: [{ image1: 0, image2: 9, matches: new Int32Array(0) }] })).toThrow(
      /pair 0: image indices out of range/,
    );
  });
});
