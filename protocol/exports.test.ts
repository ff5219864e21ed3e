import { describe, expect, it } from "vitest";
import { CONVERSIONS, type ConversionEdge, EXPORT_ARTIFACT_TYPES, conversionCapability, planConversion } from "./exports";

const snapshot = { format: "svc.reconstruction.snapshot", kind: "reconstruction.snapshot" };
const colmapText = { format: "colmap.model.text.v1", kind: "reconstruction.colmap_model" };
const all = () => true;
const plan = (
  from: typeof snapshot,
  targets: string[],
  o: { toKind?: string; requireLossless?: boolean; available?: (e: ConversionEdge) => boolean } = {},
) => planConversion(from, { targets, toKind: o.toKind, requireLossless: o.requireLossless ?? false, available: o.available ?? all });
const formats = (p: ReturnType<typeof plan>) => (p.ok ? p.steps.map((s) => s.to_format) : p.reason);

describe("the conversion graph (4.10)", () => {
  it("every export format is one step from a snapshot or a submodel, typed as the export writes it", () => {
    for (const from of ["svc.reconstruction.snapshot", "svc.reconstruction.submodel"]) {
      for (const type of Object.values(EXPORT_ARTIFACT_TYPES)) {
        expect(
          CONVERSIONS.some(
            (e) =>
              e.from_format === from && e.to_format === type.artifact_format && e.to_kind === type.kind && e.lossless === type.lossless,
          ),
        ).toBe(true);
      }
    }
  });

  it("picks the shortest path: one step from a snapshot, two from a COLMAP text model (through the snapshot)", () => {
    expect(formats(plan(snapshot, ["ply.binary_little_endian.v1"]))).toEqual(["ply.binary_little_endian.v1"]);
    expect(formats(plan(colmapText, ["ply.binary_little_endian.v1"]))).toEqual([
      "svc.reconstruction.snapshot",
      "ply.binary_little_endian.v1",
    ]);
    expect(formats(plan(colmapText, ["colmap.model.binary.v1"]))).toEqual(["svc.reconstruction.snapshot", "colmap.model.binary.v1"]);
    // Already there: no steps.
    expect(formats(plan(colmapText, ["ply.binary_little_endian.v1", "colmap.model.text.v1"]))).toEqual([]);
  });

  it("equally short paths go to the earlier accepted format; to_kind restricts the result", () => {
    const p = plan(snapshot, ["nerfstudio.transforms.v1", "ply.binary_little_endian.v1"]);
    expect(p).toMatchObject({ ok: true, to_format: "nerfstudio.transforms.v1", to_kind: "reconstruction.nerf_dataset" });
    expect(plan(snapshot, ["ply.binary_little_endian.v1", "nerfstudio.transforms.v1"])).toMatchObject({
      to_format: "ply.binary_little_endian.v1",
    });
    expect(
      plan(snapshot, ["ply.binary_little_endian.v1", "nerfstudio.transforms.v1"], { toKind: "reconstruction.nerf_dataset" }),
    ).toMatchObject({ to_format: "nerfstudio.transforms.v1" });
    expect(formats(plan(snapshot, ["ply.binary_little_endian.v1"], { toKind: "reconstruction.nerf_dataset" }))).toBe("no_path");
  });

  it("says why there is no plan: none lossless, a step switched off, or no path at all", () => {
    expect(plan(snapshot, ["colmap.model.text.v1"], { requireLossless: true })).toMatchObject({ ok: true });
    expect(formats(plan(snapshot, ["ply.binary_little_endian.v1"], { requireLossless: true }))).toBe("lossless_impossible");
    expect(formats(plan(colmapText, ["colmap.model.binary.v1"], { requireLossless: true }))).toBe("lossless_impossible");
    const noPly = (e: ConversionEdge) => conversionCapability(e) !== "export.ply";
    expect(plan(colmapText, ["ply.binary_little_endian.v1"], { available: noPly })).toEqual({
      ok: false,
      reason: "unavailable",
      capability: "export.ply",
    });
    expect(formats(plan(snapshot, ["image.jpeg.v1"]))).toBe("no_path");
    expect(formats(plan({ format: "hloc.features.h5.v1", kind: "features.hloc_h5" }, ["svc.features.local.v1"]))).toBe("no_path");
  });
});
