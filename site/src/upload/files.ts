/**
 * @module Photos from a drop (files or whole folders, walked with the File and Directory Entries
 * API) or from the file/folder pickers, each with the name it gets in the dataset: its relative
 * path inside a dropped folder, so photos of different folders keep distinct names.
 */
import { ImageName } from "../../../protocol/schemas/dataset";

export interface PickedFile {
  file: File;
  name: string;
}

const IMAGE_NAME = /\.(jpe?g|png)$/i;

/** Entries of a dropped folder, recursively (readEntries answers in batches until empty). */
async function walk(entry: FileSystemEntry, out: PickedFile[]): Promise<void> {
  if (entry.isFile) {
    const file = await new Promise<File>((resolve, reject) => (entry as FileSystemFileEntry).file(resolve, reject));
    out.push({ file, name: entry.fullPath.replace(/^\/+/, "") });
    return;
  }
  const reader = (entry as FileSystemDirectoryEntry).createReader();
  for (;;) {
    const batch = await new Promise<FileSystemEntry[]>((resolve, reject) => reader.readEntries(resolve, reject));
    if (batch.length === 0) return;
    for (const child of batch) await walk(child, out);
  }
}

export async function filesFromDrop(data: DataTransfer): Promise<PickedFile[]> {
  const entries = [...data.items].map((i) => i.webkitGetAsEntry?.() ?? null);
  if (entries.some((e) => e?.isDirectory)) {
    const out: PickedFile[] = [];
    for (const e of entries) if (e) await walk(e, out);
    return out;
  }
  return filesFromInput([...data.files]);
}

export function filesFromInput(files: File[]): PickedFile[] {
  return files.map((file) => ({ file, name: file.webkitRelativePath || file.name }));
}

/**
 * Keeps what can be a photo: JPEG/PNG by type or extension (a folder also holds sidecar files).
 * Names are made valid dataset names (2.4) and unique, as the dataset's manifest needs.
 */
// Control characters are what a name must not hold (ImageName).
// eslint-disable-next-line no-control-regex
const BACKSLASH_OR_CONTROL = /[\\\u0000-\u001f\u007f]/g;
// eslint-disable-next-line no-control-regex
const SLASH_BACKSLASH_OR_CONTROL = /[\\/\u0000-\u001f\u007f]/g;

export function photosOnly(picked: PickedFile[], taken: Set<string>): PickedFile[] {
  const out: PickedFile[] = [];
  for (const p of picked) {
    if (!/^image\/(jpeg|png)$/.test(p.file.type) && !IMAGE_NAME.test(p.file.name)) continue;
    let name = p.name
      .split("/")
      .filter((s) => s && s !== "." && s !== "..")
      .join("/")
      .replace(BACKSLASH_OR_CONTROL, "_");
    if (!ImageName.safeParse(name).success) name = p.file.name.replace(SLASH_BACKSLASH_OR_CONTROL, "_") || "photo.jpg";
    const base = name;
    const dot = base.lastIndexOf(".") > 0 ? base.lastIndexOf(".") : base.length;
    for (let n = 2; taken.has(name); n++) name = `${base.slice(0, dot)}-${n}${base.slice(dot)}`;
    taken.add(name);
    out.push({ file: p.file, name });
  }
  return out;
}
