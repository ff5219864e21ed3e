import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { TAR_END_BYTES, readTar, tarArchive, tarEntryHeader, tarPaddingLength } from "./tar";

const dir = mkdtempSync(join(tmpdir(), "tar-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const enc = (s: string) => new TextEncoder().encode(s);

describe("tar archives (pax interchange format)", () => {
  const long = `${"deep/".repeat(40)}${"n".repeat(120)}.kpt`;
  const files: [string, Uint8Array][] = [
    ["cameras.txt", enc("# Camera list\n1 PINHOLE 640 480 500 500 320 240\n")],
    ["sparse/0/points3D.bin", Uint8Array.from({ length: 1500 }, (_, i) => i % 251)],
    ["empty.txt", new Uint8Array(0)],
    [`${"p".repeat(140)}/${"f".repeat(90)}.txt`, enc("ustar prefix")],
    [long, enc("pax path")],
    ["images/café é.jpg", enc("utf-8 name")],
  ];
  const archive = tarArchive(files);
  const path = join(dir, "a.tar");
  writeFileSync(path, archive);

  it("GNU tar lists every file with its full path and size, in order", () => {
    const listed = execFileSync("tar", ["-tvf", path], { encoding: "utf8" }).trim().split("\n");
    expect(listed).toHaveLength(files.length);
    files.forEach(([name, data], i) => {
      expect(listed[i]).toContain(name);
      expect(listed[i]).toMatch(new RegExp(`\\s${data.length}\\s`));
    });
  });

  it("GNU tar extracts the same bytes", () => {
    const out = join(dir, "x");
    execFileSync("mkdir", ["-p", out]);
    execFileSync("tar", ["-xf", path, "-C", out]);
    for (const [name, data] of files) expect(new Uint8Array(readFileSync(join(out, name)))).toEqual(data);
  });

  it("readTar reads back what GNU tar writes (ustar prefixes, pax paths) and what we write", () => {
    const src = join(dir, "src");
    for (const [name, data] of files) {
      execFileSync("mkdir", ["-p", join(src, name, "..")]);
      writeFileSync(join(src, name), data);
    }
    const gnu = join(dir, "gnu.tar");
    execFileSync("tar", ["--format=pax", "-cf", gnu, "-C", src, ...files.map(([name]) => name)]);
    for (const read of [readTar(new Uint8Array(readFileSync(gnu))), readTar(archive)]) {
      expect([...read.keys()]).toEqual(files.map(([name]) => name));
      for (const [name, data] of files) expect(read.get(name)).toEqual(data);
    }
  });

  it("is the concatenation of headers, data and padding, then the end blocks; the same files give the same bytes", () => {
    const size = files.reduce(
      (s, [name, data]) => s + tarEntryHeader(name, data.length).length + data.length + tarPaddingLength(data.length),
      TAR_END_BYTES,
    );
    expect(archive.length).toBe(size);
    expect(archive.length % 512).toBe(0);
    expect(tarArchive(files)).toEqual(archive);
  });
});
