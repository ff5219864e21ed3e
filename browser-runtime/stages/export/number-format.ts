/**
 * @module Numbers printed as COLMAP's C++ streams print them. COLMAP 3.8's text writers set
 * `precision(17)` on the stream, and its NVM writer leaves measurements at the default 6; a C++
 * stream in default float format prints like printf's `%.{precision}g`: `precision` significant
 * digits, trailing zeros dropped, scientific notation when the exponent is < -4 or >= precision.
 *
 * glibc rounds the exact binary value and breaks exact ties to even; JavaScript's toPrecision
 * breaks them upward. Ties are common here (float32 positions widened to double have short exact
 * expansions: 9.93976593017578125 prints 9.9397659301757812), so the rounding is done on the
 * exact digits.
 */

/** ECMAScript's longest exact expansion: toExponential accepts up to 100 fraction digits. */
const EXACT_DIGITS = 100;

/** printf("%.{precision}g", value). */
export function formatG(value: number, precision = 17): string {
  if (!Number.isFinite(value)) return Number.isNaN(value) ? "nan" : value > 0 ? "inf" : "-inf";
  if (value === 0) return Object.is(value, -0) ? "-0" : "0";
  const p = Math.max(1, precision);
  const sign = value < 0 ? "-" : "";
  const [digits, exponent] = significantDigits(Math.abs(value), p);
  if (exponent < -4 || exponent >= p) {
    const m = stripZeros(digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits);
    return `${sign}${m}e${exponent < 0 ? "-" : "+"}${String(Math.abs(exponent)).padStart(2, "0")}`;
  }
  const fixed =
    exponent >= 0 ? `${digits.slice(0, exponent + 1)}.${digits.slice(exponent + 1)}` : `0.${"0".repeat(-exponent - 1)}${digits}`;
  return sign + stripZeros(fixed);
}

/** `p` significant digits of a positive x, rounded as glibc rounds, and the decimal exponent. */
function significantDigits(x: number, p: number): [string, number] {
  // An exact tie needs exactly p + 1 significant digits ending in 5, which toExponential(p) then
  // prints exactly; any other value rounds the same way in JavaScript and glibc.
  const probe = x.toExponential(p);
  if (probe[probe.indexOf("e") - 1] !== "5") return splitExponential(x.toExponential(p - 1));
  const [all, exponent] = splitExponential(x.toExponential(EXACT_DIGITS));
  const digits = all.slice(0, p);
  const rest = all.slice(p);
  const tie = /^50*$/.test(rest);
  const roundUp = rest[0]! > "5" || (rest[0] === "5" && !tie) || (tie && Number(digits[p - 1]) % 2 === 1);
  if (!roundUp) return [digits, exponent];
  const bumped = increment(digits);
  return bumped.length > p ? [bumped.slice(0, p), exponent + 1] : [bumped, exponent];
}

function splitExponential(s: string): [string, number] {
  const e = s.indexOf("e");
  return [s.slice(0, e).replace(".", ""), Number(s.slice(e + 1))];
}

/** A decimal digit string plus one in its last place (may grow by a digit). */
function increment(digits: string): string {
  const d = digits.split("").map(Number);
  let i = d.length - 1;
  while (i >= 0 && d[i] === 9) d[i--] = 0;
  if (i < 0) d.unshift(1);
  else d[i]! += 1;
  return d.join("");
}

function stripZeros(s: string): string {
  if (!s.includes(".")) return s;
  return s.replace(/0+$/, "").replace(/\.$/, "");
}
