/**
 * @module Real photos of the shared sets, inlined at test build time (vite `?inline` gives a
 * data URL; the files are never copied into the repo).
 */
import lund01 from "../../../shared/datasets/opensfm-lund/images/01.jpg?inline";
import lund02 from "../../../shared/datasets/opensfm-lund/images/02.jpg?inline";
import sacreCoeur from "../../../shared/datasets/sacre-coeur/images/03903474_1471484089.jpg?inline";
import sceaux from "../../../shared/datasets/sceaux-castle/images/100_7100.JPG?inline";

const bytes = (dataUrl: string) => Uint8Array.from(atob(dataUrl.slice(dataUrl.indexOf(",") + 1)), (c) => c.charCodeAt(0));

/** Lund street, 1024x768, EXIF with GPS and focal length 4.3 mm (35 mm equivalent 35), orientation 1. */
export const LUND_01 = bytes(lund01);
export const LUND_02 = bytes(lund02);
/** Sceaux castle, 2832x2128, Kodak Z612 EXIF (make, model, date, focal length 5.85 mm). */
export const SCEAUX = bytes(sceaux);
/** Sacre-Coeur, a web photo without any EXIF. */
export const SACRE_COEUR = bytes(sacreCoeur);

/**
 * The same JPEG with its EXIF Orientation tag (0x0112) rewritten to `orientation`: a real photo
 * that a camera held sideways would have produced.
 */
export function withOrientation(jpeg: Uint8Array, orientation: number): Uint8Array {
  const out = jpeg.slice();
  const tiff = findTiffHeader(out);
  const view = new DataView(out.buffer, out.byteOffset + tiff);
  const le = view.getUint16(0) === 0x4949;
  const ifd0 = view.getUint32(4, le);
  const count = view.getUint16(ifd0, le);
  for (let i = 0; i < count; i++) {
    const entry = ifd0 + 2 + i * 12;
    if (view.getUint16(entry, le) === 0x0112) {
      view.setUint16(entry + 8, orientation, le);
      return out;
    }
  }
  throw new Error("no Orientation tag in IFD0");
}

function findTiffHeader(jpeg: Uint8Array): number {
  for (let i = 2; i + 10 < jpeg.length; i++) {
    // APP1 "Exif\0\0" then the TIFF header.
    if (jpeg[i] === 0xff && jpeg[i + 1] === 0xe1 && String.fromCharCode(...jpeg.subarray(i + 4, i + 8)) === "Exif") return i + 10;
  }
  throw new Error("no EXIF segment");
}
