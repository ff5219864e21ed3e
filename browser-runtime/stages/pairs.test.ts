import { describe, expect, it } from "vitest";
import type { DatasetSnapshot } from "../../protocol";
import { enuOf } from "./enu";
import {
  exhaustivePairs,
  fromPosesPairs,
  pairPositions,
  retrievalPairs,
  selectPairs,
  sequenceOrder,
  sequentialPairs,
  spatialPairs,
} from "./pairs";

const names = ["a", "b", "c", "d", "e"];
const flat = (pairs: Array<{ imageName1: string; imageName2: string }>): string[] => pairs.map((p) => p.imageName1 + p.imageName2);

describe("pair selection (spec 2.12 PairsSpec)", () => {
  it("exhaustive gives every unordered pair once, n (n - 1) / 2 in all", () => {
    expect(flat(exhaustivePairs(names))).toEqual(["ab", "ac", "ad", "ae", "bc", "bd", "be", "cd", "ce", "de"]);
    expect(exhaustivePairs(Array.from({ length: 29 }, (_, i) => `${i}`)).length).toBe(406);
    expect(exhaustivePairs(["only"])).toEqual([]);
  });

  it("sequential pairs each image with the next `overlap` images", () => {
    expect(flat(sequentialPairs(names, 2))).toEqual(["ab", "ac", "bc", "bd", "cd", "ce", "de"]);
    expect(sequentialPairs(names, 10)).toEqual(exhaustivePairs(names));
    expect(() => sequentialPairs(names, 0)).toThrow(RangeError);
  });

  it("a sequence is ordered by the pose priors' timestamp_ns when every image has one (int64 strings too), else by the dataset", () => {
    const at = (name: string, timestamp_ns: number | string | null) => ({
      name,
      pose_prior: {
        cam_from_world: { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [0, 0, 0] as [number, number, number] },
        timestamp_ns,
      },
    });
    const clocked = [at("a", 30), at("b", "1700000000000000002"), at("c", 10), at("d", "1700000000000000001"), at("e", 10)];
    expect(sequenceOrder(clocked)).toEqual(["c", "e", "a", "d", "b"]);
    expect(flat(sequentialPairs(sequenceOrder(clocked), 1))).toEqual(["ce", "ea", "ad", "db"]);
    expect(sequenceOrder([...clocked.slice(0, 4), at("e", null)])).toEqual(names);
    expect(sequenceOrder([...clocked.slice(0, 4), { name: "e", pose_prior: null }])).toEqual(names);
  });

  it("selectPairs follows the spec defaults and refuses strategies it cannot run", () => {
    expect(selectPairs(names)).toEqual(exhaustivePairs(names));
    expect(selectPairs(names, { strategy: "sequential" }).length).toBe(10);
    expect(selectPairs(names, { strategy: "sequential", overlap: 1 }).length).toBe(4);
    expect(() => selectPairs(names, { strategy: "explicit" })).toThrow(/not supported/);
    expect(() => selectPairs(names, { strategy: "vocabtree" })).toThrow(/similarity index/);
    expect(() => selectPairs(names, { strategy: "retrieval" })).toThrow(/similarity index/);
    expect(() => selectPairs(names, { strategy: "spatial" })).toThrow(/positions/);
  });

  it("retrieval pairs each image with its retrieval_k nearest by Hamming distance, and with those that retrieve it; each pair once, in order", () => {
    // a-b and c-d are near twins; e is far from all, nearest to d (47 bits apart).
    const hashes = ["0000000000000000", "0000000000000001", "00000000ffff0000", "00000000ffff0001", "ffffffffffffffff"];
    expect(flat(retrievalPairs(names, { hashes }, 1))).toEqual(["ab", "cd", "de"]);
    expect(flat(selectPairs(names, { strategy: "retrieval", retrieval_k: 1 }, { hashes }))).toEqual(["ab", "cd", "de"]);
    expect(retrievalPairs(names, { hashes }, 4)).toEqual(exhaustivePairs(names));
    // The spec default retrieval_k (20) on 5 images: every pair.
    expect(selectPairs(names, { strategy: "retrieval" }, { hashes })).toEqual(exhaustivePairs(names));
    expect(() => retrievalPairs(names, { hashes: hashes.slice(1) }, 1)).toThrow(RangeError);
    expect(() => retrievalPairs(names, { hashes }, 0)).toThrow(RangeError);
  });

  it("VLAD retrieval pairs by cosine with query expansion, and adds the sequential window when the order is a sequence", () => {
    // Unit vectors on a circle: image i at angle (order[i] * 30 deg), so neighbours in angle are neighbours in the walk.
    const at = (order: number[]) => ({
      vectors: Float32Array.from(order.flatMap((a) => [Math.cos((a * Math.PI) / 6), Math.sin((a * Math.PI) / 6)])),
      dim: 2,
    });
    const walk = ["a", "b", "c", "d", "e", "f", "g", "h"];
    // In walk order each image retrieves angular neighbours (k = 3), the set looks ordered,
    // and overlap 3 adds (i, i + 3).
    expect(retrievalPairs(walk, at([0, 1, 2, 3, 4, 5, 6, 7]), 3, 3)).toEqual(sequentialPairs(walk, 3));
    // Shuffled: the same geometry gives angular neighbours only (at most 90 deg apart), and no window.
    const order = [0, 4, 1, 5, 2, 6, 3, 7];
    const shuffled = retrievalPairs(walk, at(order), 3, 3);
    expect(shuffled.length).toBeGreaterThan(0);
    for (const p of shuffled)
      expect(Math.abs(order[walk.indexOf(p.imageName1)]! - order[walk.indexOf(p.imageName2)]!)).toBeLessThanOrEqual(3);
    expect(() => retrievalPairs(walk, { vectors: new Float32Array(14), dim: 2 }, 1)).toThrow(RangeError);
  });

  it("spatial pairs images within overlap_distance_m, at most the nearest 50 each; images without a position get none", () => {
    // a-b 3 m apart, b-c 4 m, a-c 5 m; d far away; e unplaced.
    const positions: ([number, number, number] | null)[] = [[0, 0, 0], [3, 0, 0], [3, 4, 0], [1000, 0, 0], null];
    expect(flat(spatialPairs(names, positions, 4))).toEqual(["ab", "bc"]);
    expect(flat(spatialPairs(names, positions, 5))).toEqual(["ab", "ac", "bc"]);
    // One nearest neighbour each: a->b, b->a, c->b; the pair of each image and its nearest once.
    expect(flat(spatialPairs(names, positions, 5, 1))).toEqual(["ab", "bc"]);
    expect(flat(selectPairs(names, { strategy: "spatial", overlap_distance_m: 4 }, null, { positions, poses: [] }))).toEqual(["ab", "bc"]);
    // Null distance: COLMAP's 100 m.
    expect(flat(selectPairs(names, { strategy: "spatial" }, null, { positions, poses: [] }))).toEqual(["ab", "ac", "bc"]);
    // 120 images on a line 1 m apart: each pairs with its 50 nearest, so the set is far from exhaustive.
    const line = Array.from({ length: 120 }, (_, i) => `${i}`);
    const many = spatialPairs(
      line,
      line.map((_, i) => [i, 0, 0]),
    );
    expect(many.length).toBeLessThan(exhaustivePairs(line).length / 2);
    expect(many.every((p) => Math.abs(Number(p.imageName1) - Number(p.imageName2)) <= 50)).toBe(true);
  });

  it("from_poses pairs centres within overlap_distance_m whose principal axes are within max_angle_deg", () => {
    const axis = (deg: number): [number, number, number] => [Math.sin((deg * Math.PI) / 180), 0, Math.cos((deg * Math.PI) / 180)];
    const poses = [
      { centre: [0, 0, 0] as [number, number, number], axis: axis(0) },
      { centre: [1, 0, 0] as [number, number, number], axis: axis(20) },
      { centre: [2, 0, 0] as [number, number, number], axis: axis(90) },
      { centre: [50, 0, 0] as [number, number, number], axis: axis(0) },
      null,
    ];
    expect(flat(fromPosesPairs(names, poses, 10, 30))).toEqual(["ab"]);
    expect(flat(fromPosesPairs(names, poses, 10, 80))).toEqual(["ab", "bc"]);
    expect(flat(fromPosesPairs(names, poses, 10))).toEqual(["ab", "ac", "bc"]);
    expect(flat(fromPosesPairs(names, poses, 100, 30))).toEqual(["ab", "ad", "bd"]);
    expect(
      flat(selectPairs(names, { strategy: "from_poses", overlap_distance_m: 10, max_angle_deg: 30 }, null, { positions: [], poses })),
    ).toEqual(["ab"]);
  });

  it("positions come from pose priors (centre, principal axis) when two images have one, else GPS in ENU metres on the ground", () => {
    const image = (name: string, extra: Partial<DatasetSnapshot["images"][number]>) =>
      ({ name, gps: null, pose_prior: null, ...extra }) as DatasetSnapshot["images"][number];
    // 90 degrees about y: the camera's +z (R^T e3) is world -x, its centre -R^T t.
    const q = { w: Math.SQRT1_2, x: 0, y: Math.SQRT1_2, z: 0 };
    const priors = [
      image("a", { pose_prior: { cam_from_world: { rotation: q, translation: [0, 0, 5] } } }),
      image("b", { pose_prior: { cam_from_world: { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [1, 2, 3] } } }),
      image("c", { gps: { latitude: 55.7, longitude: 13.19, altitude: 20, horizontal_accuracy_m: null } }),
    ];
    const fromPriors = pairPositions(priors);
    expect(fromPriors.positions[0]![0]).toBeCloseTo(5, 12);
    expect(fromPriors.positions[0]![2]).toBeCloseTo(0, 12);
    expect(fromPriors.poses[0]!.axis[0]).toBeCloseTo(-1, 12);
    expect(fromPriors.positions[1]).toEqual([-1, -2, -3]);
    expect(fromPriors.positions[2]).toBeNull();
    // One prior is not a frame: GPS then, the ENU origin at the mean position, up left out.
    const gps = (lat: number, alt: number | null) => ({ latitude: lat, longitude: 13.19, altitude: alt, horizontal_accuracy_m: null });
    const located = pairPositions([
      image("a", { gps: gps(55.7, 10) }),
      image("b", { gps: gps(55.7001, 90) }),
      image("c", { pose_prior: { cam_from_world: { rotation: q, translation: [0, 0, 0] }, gps: gps(55.7002, null) } }),
      image("d", {}),
    ]);
    const origin = { latitude: 55.7001, longitude: 13.19, altitude: 50 };
    const northOf = (lat: number) => enuOf({ latitude: lat, longitude: 13.19, altitude: 50 }, origin)[1];
    expect(located.positions[0]![1]).toBeCloseTo(northOf(55.7), 3);
    expect(located.positions[2]![1]).toBeCloseTo(northOf(55.7002), 3);
    expect(located.positions[1]![2]).toBe(0);
    expect(located.positions[3]).toBeNull();
    expect(Math.abs(located.positions[0]![1] - located.positions[1]![1])).toBeCloseTo(11.13, 1);
  });

  it("vocabulary-tree pairs by tf-idf histogram intersection; words every image holds weigh nothing", () => {
    // a and b share rare words 1 and 2, c and d share 3; word 0 is in every image (idf 0), e holds only it.
    const bag = (words: number[]) => ({ words, counts: words.map(() => 2) });
    const bags = [bag([0, 1, 2]), bag([0, 1, 2, 5]), bag([0, 3]), bag([0, 3, 4]), bag([0])];
    expect(flat(selectPairs(names, { strategy: "vocabtree", retrieval_k: 1 }, { bags }))).toEqual(["ab", "ae", "cd"]);
  });
});
