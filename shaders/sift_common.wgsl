// Shared by the SIFT kernels (the host prepends it to sift_detect, sift_orientation and
// sift_descriptor): the keypoint record, VLFeat's numerical approximations, which are part
// of the algorithm's definition (engine-wasm/src/feature/SIFT.md, sift_math.h), and reads of
// the octave's Gaussian planes. Each of those kernels declares
// `gauss: array<f32>` (S + 3 planes, s = -1 .. S + 1, row-major); DoG values and gradients are
// computed from it where needed instead of being stored, which keeps the GPU memory at
// 24 bytes per first-octave pixel.

// A refined keypoint in octave pixel units (VLFeat VlSiftKeypoint without the octave).
struct Keypoint {
  x: f32,
  y: f32,
  sigma: f32,
  scale: f32,     // sub-level position s + b_s
  ix: u32,        // integer position after refinement
  iy: u32,
  level: u32,     // integer DoG level s (0 .. S - 1): selects the gradient plane
  sort_key: u32,  // (level << 28) | (detected row << 14) | detected column: VLFeat's scan order
}

const PI: f32 = 3.14159265358979323846;
const TWO_PI: f32 = 6.28318530717958647692;
const FLT_EPSILON: f32 = 1.19209290e-07;

// VLFeat vl_mod_2pi_f: into [0, 2 pi] by repeated subtraction/addition.
fn mod_2pi(v: f32) -> f32 {
  var x = v;
  while (x > TWO_PI) { x -= TWO_PI; }
  while (x < 0.0) { x += TWO_PI; }
  return x;
}

// VLFeat fast_expn: exp(-t) by linear interpolation in the table exp(-i 25/256), i = 0 .. 256.
fn fast_expn(t: f32) -> f32 {
  if (t > 25.0) { return 0.0; }
  let u = t * (256.0 / 25.0);
  let i = floor(u);
  let a = exp(-i * (25.0 / 256.0));
  let b = exp(-(i + 1.0) * (25.0 / 256.0));
  return a + (u - i) * (b - a);
}

// VLFeat vl_fast_atan2_f (float32, max error about 0.01 rad).
fn fast_atan2(y: f32, x: f32) -> f32 {
  let ay = abs(y) + FLT_EPSILON;
  var r: f32;
  var a: f32;
  if (x >= 0.0) {
    r = (x - ay) / (x + ay);
    a = PI / 4.0;
  } else {
    r = (x + ay) / (ay - x);
    a = 3.0 * PI / 4.0;
  }
  a += (0.1821 * r * r - 0.9675) * r;
  return select(a, -a, y < 0.0);
}

// DoG plane p (p = s + 1, s = -1 .. S) at pixel index i of a `plane`-pixel octave:
// G_{s+1} - G_s, the same float subtraction as a stored DoG.
fn dog_at(plane: u32, p: u32, i: u32) -> f32 {
  return gauss[(p + 1u) * plane + i] - gauss[p * plane + i];
}

// Gradient (magnitude, angle in [0, 2 pi]) of Gaussian level s (0 .. S - 1) at (x, y), SIFT.md
// section 4 (VLFeat update_gradient): central differences inside, one-sided on the border.
fn gradient_at(w: u32, h: u32, s: u32, x: u32, y: u32) -> vec2f {
  let base = (s + 1u) * w * h;  // Gaussian plane of level s is s + 1
  let c = gauss[base + y * w + x];
  var gx: f32;
  if (x == 0u) { gx = gauss[base + y * w + 1u] - c; }
  else if (x == w - 1u) { gx = c - gauss[base + y * w + x - 1u]; }
  else { gx = 0.5 * (gauss[base + y * w + x + 1u] - gauss[base + y * w + x - 1u]); }
  var gy: f32;
  if (y == 0u) { gy = gauss[base + w + x] - c; }
  else if (y == h - 1u) { gy = c - gauss[base + (y - 1u) * w + x]; }
  else { gy = 0.5 * (gauss[base + (y + 1u) * w + x] - gauss[base + (y - 1u) * w + x]); }
  return vec2f(sqrt(gx * gx + gy * gy), mod_2pi(fast_atan2(gy, gx) + TWO_PI));
}
