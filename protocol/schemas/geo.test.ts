import { describe, expect, it } from "vitest";
import { PRIOR_INT64_KEYS, parseInt64Json, stringifyInt64Json } from "../int64-json";
import { PosePrior, Sim3, covarianceProblem, symmetricEigenvalues } from "./geo";

describe("covariance checks", () => {
  it("eigenvalues of a symmetric matrix by Jacobi rotations match the known spectrum", () => {
    // Q diag(1..6) Q^T for a rotation Q mixing every axis.
    const d = [1, 2, 3, 4, 5, 6];
    const q = Array.from({ length: 36 }, (_, k) => (Math.sin(12.9898 * (k + 1) + 78.233 * (k * k)) * 43758.5453) % 1);
    // Gram-Schmidt on q's rows gives an orthonormal basis.
    const rows: number[][] = [];
    for (let i = 0; i < 6; i++) {
      let r = q.slice(6 * i, 6 * i + 6);
      for (const b of rows) {
        const dot = r.reduce((s, v, k) => s + v * b[k]!, 0);
        r = r.map((v, k) => v - dot * b[k]!);
      }
      const n = Math.hypot(...r);
      rows.push(r.map((v) => v / n));
    }
    const m = Array.from({ length: 36 }, (_, k) =>
      rows.reduce((s, _r, e) => s + rows[e]![Math.floor(k / 6)]! * d[e]! * rows[e]![k % 6]!, 0),
    );
    expect(
      symmetricEigenvalues(m, 6)
        .sort((a, b) => a - b)
        .map((v) => +v.toFixed(9)),
    ).toEqual(d);
    expect(covarianceProblem(m)).toBeNull();
  });

  it("accepts semi-definite matrices (a zero variance), refuses asymmetric and indefinite ones", () => {
    const diag = (v: number[]) => Array.from({ length: 36 }, (_, k) => (k % 7 === 0 ? v[k / 7]! : 0));
    expect(covarianceProblem(diag([0, 1, 1, 1e-6, 1e-6, 0]))).toBeNull();
    expect(covarianceProblem(diag([1, 1, 1, 1, 1, -0.01]))).toMatch(/positive semi-definite/);
    const asym = diag([1, 1, 1, 1, 1, 1]);
    asym[5] = 0.1;
    expect(covarianceProblem(asym)).toMatch(/symmetric/);
    // Roundoff-level negative eigenvalues pass (a covariance computed in floating point).
    expect(covarianceProblem(diag([1, 1, 1, 1, 1, -1e-13]))).toBeNull();
  });
});

describe("PosePrior and Sim3 shapes", () => {
  const rigid = { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [0, 0, 0] };
  it("a quaternion within 1e-3 of unit norm is a rotation; further is not", () => {
    expect(PosePrior.safeParse({ cam_from_world: { ...rigid, rotation: { w: 1.0009, x: 0, y: 0, z: 0 } } }).success).toBe(true);
    expect(PosePrior.safeParse({ cam_from_world: { ...rigid, rotation: { w: 1.002, x: 0, y: 0, z: 0 } } }).success).toBe(false);
  });
  it("a Sim3 needs a positive finite scale and finite numbers", () => {
    for (const scale of [0, -1, Infinity, Number.NaN]) expect(Sim3.safeParse({ ...rigid, scale }).success).toBe(false);
    expect(Sim3.safeParse({ ...rigid, translation: [0, Number.NaN, 0], scale: 1 }).success).toBe(false);
    expect(Sim3.safeParse({ ...rigid, scale: 2.5 }).success).toBe(true);
  });
});

describe("int64 JSON", () => {
  it("keeps every digit of 64-bit timestamps where the engine reads JSON source text, and writes them back bare", () => {
    const text = `{"timestamp_ns":9223372036854775807,"imu":{"timestamp_ns":-17},"other":9007199254740993}`;
    const parsed = parseInt64Json(text, PRIOR_INT64_KEYS) as Record<string, unknown>;
    // Node 20's V8 (11.3) lacks JSON.parse source access; workerd's has it (worker/routes/pose-priors.test.ts checks the round trip there).
    const sourceAccess = typeof (JSON as { rawJSON?: unknown }).rawJSON === "function";
    expect(parsed.timestamp_ns).toBe(sourceAccess ? "9223372036854775807" : "9223372036854775808");
    expect(parsed.other).toBe(9007199254740992);
    expect(stringifyInt64Json({ timestamp_ns: "9223372036854775807", n: "12" }, PRIOR_INT64_KEYS)).toBe(
      `{"timestamp_ns":9223372036854775807,"n":"12"}`,
    );
  });
});
