// Panorama projections (spec 4.14), the GPU twin of engine-wasm/src/image/projection.cc: the
// same f32 arithmetic in the same order. Images are 8-bit RGBA packed one pixel per u32
// (r | g << 8 | b << 16 | a << 24), row-major; pixel centres at +0.5.
//  - perspective_from_equirectangular: a pinhole view (a cubemap face, or any view) of an
//    equirectangular panorama; the panorama wraps in longitude and continues over the poles.
//  - equirectangular_from_cubemap: a panorama from six faces stored one after another in the
//    cubemap order (front, right, back, left, up, down); faces clamp at their edges.
// Sampling: 0 nearest, 1 linear, 2 cubic (Keys, a = -0.5), 3 lanczos (Lanczos-3, normalised).

struct ProjectionParams {
  src_width: u32,
  src_height: u32,
  dst_width: u32,
  dst_height: u32,
  sampling: u32,
  face_size: u32,
  _pad0: u32,
  _pad1: u32,
  // fx, fy, cx, cy of the perspective view.
  intrinsics: vec4f,
  // pano_from_cam of the view, row-major (rows padded to vec4).
  rotation: array<vec4f, 3>,
  // rig_from_face of each face, row-major (rows padded to vec4).
  faces: array<vec4f, 18>,
}

@group(0) @binding(0) var<uniform> params: ProjectionParams;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

const PI: f32 = 3.14159265358979323846;
const INV_TWO_PI: f32 = 0.15915494309189535;
const INV_PI: f32 = 0.3183098861837907;

fn unpack(p: u32) -> vec4f {
  return vec4f(f32(p & 0xffu), f32((p >> 8u) & 0xffu), f32((p >> 16u) & 0xffu), f32(p >> 24u));
}

fn pack(c: vec4f) -> u32 {
  let v = vec4u(clamp(floor(c + vec4f(0.5)), vec4f(0.0), vec4f(255.0)));
  return v.x | (v.y << 8u) | (v.z << 16u) | (v.w << 24u);
}

// The panorama pixel at integer coordinates, wrapped and continued over the poles.
fn pano_index(xi: i32, yi: i32) -> u32 {
  let w = i32(params.src_width);
  let h = i32(params.src_height);
  var x = xi;
  var y = yi;
  if (y < 0) {
    y = -1 - y;
    x = x + w / 2;
  } else if (y >= h) {
    y = 2 * h - 1 - y;
    x = x + w / 2;
  }
  y = min(max(y, 0), h - 1);
  x = ((x % w) + w) % w;
  return u32(y * w + x);
}

// A face pixel at integer coordinates, clamped to the face.
fn face_index(face: i32, xi: i32, yi: i32) -> u32 {
  let s = i32(params.face_size);
  let x = min(max(xi, 0), s - 1);
  let y = min(max(yi, 0), s - 1);
  return u32(face * s * s + y * s + x);
}

fn sinc(x: f32) -> f32 {
  if (abs(x) < 1e-6) { return 1.0; }
  let px = PI * x;
  return sin(px) / px;
}

struct Taps {
  w: array<f32, 6>,
  first: i32,
  count: i32,
}

fn weights(t: f32) -> Taps {
  var taps: Taps;
  switch params.sampling {
    case 1u: {
      taps.first = 0;
      taps.count = 2;
      taps.w[0] = 1.0 - t;
      taps.w[1] = t;
    }
    case 2u: {
      let t2 = t * t;
      let t3 = t2 * t;
      taps.first = -1;
      taps.count = 4;
      taps.w[0] = -0.5 * t3 + t2 - 0.5 * t;
      taps.w[1] = 1.5 * t3 - 2.5 * t2 + 1.0;
      taps.w[2] = -1.5 * t3 + 2.0 * t2 + 0.5 * t;
      taps.w[3] = 0.5 * t3 - 0.5 * t2;
    }
    case 3u: {
      taps.first = -2;
      taps.count = 6;
      var sum = 0.0;
      for (var k = 0; k < 6; k++) {
        let d = t - f32(k - 2);
        taps.w[k] = sinc(d) * sinc(d / 3.0);
        sum += taps.w[k];
      }
      for (var k = 0; k < 6; k++) { taps.w[k] = taps.w[k] / sum; }
    }
    default: {
      taps.first = 0;
      taps.count = 1;
      taps.w[0] = 1.0;
    }
  }
  return taps;
}

// The source at continuous coordinates (sx, sy): the panorama (face < 0) or one face.
fn sample(face: i32, sx: f32, sy: f32) -> u32 {
  if (params.sampling == 0u) {
    let xi = i32(floor(sx));
    let yi = i32(floor(sy));
    if (face < 0) { return src[pano_index(xi, yi)]; }
    return src[face_index(face, xi, yi)];
  }
  let px = sx - 0.5;
  let py = sy - 0.5;
  let fx0 = floor(px);
  let fy0 = floor(py);
  let x0 = i32(fx0);
  let y0 = i32(fy0);
  var wx = weights(px - fx0);
  var wy = weights(py - fy0);
  var sum = vec4f(0.0);
  for (var j = 0; j < wy.count; j++) {
    var row = vec4f(0.0);
    for (var i = 0; i < wx.count; i++) {
      let xi = x0 + wx.first + i;
      let yi = y0 + wy.first + j;
      var p: u32;
      if (face < 0) { p = src[pano_index(xi, yi)]; } else { p = src[face_index(face, xi, yi)]; }
      row += wx.w[i] * unpack(p);
    }
    sum += wy.w[j] * row;
  }
  return pack(sum);
}

@compute @workgroup_size(8, 8)
fn perspective_from_equirectangular(@builtin(global_invocation_id) id: vec3u) {
  if (id.x >= params.dst_width || id.y >= params.dst_height) { return; }
  let k = params.intrinsics;
  let u = (f32(id.x) + 0.5 - k.z) / k.x;
  let v = (f32(id.y) + 0.5 - k.w) / k.y;
  let r = params.rotation;
  let x = r[0].x * u + r[0].y * v + r[0].z;
  let y = r[1].x * u + r[1].y * v + r[1].z;
  let z = r[2].x * u + r[2].y * v + r[2].z;
  let longitude = atan2(x, z);
  let latitude = atan2(y, sqrt(x * x + z * z));
  let sx = (longitude * INV_TWO_PI + 0.5) * f32(params.src_width);
  let sy = (latitude * INV_PI + 0.5) * f32(params.src_height);
  dst[id.y * params.dst_width + id.x] = sample(-1, sx, sy);
}

// The face whose view holds the ray (engine: CubemapFaceOfRay; ties to the earlier face).
fn face_of_ray(d: vec3f) -> i32 {
  let a = abs(d);
  if (a.z >= a.x && a.z >= a.y) { return select(2, 0, d.z >= 0.0); }
  if (a.x >= a.y) { return select(3, 1, d.x >= 0.0); }
  return select(5, 4, d.y < 0.0);
}

@compute @workgroup_size(8, 8)
fn equirectangular_from_cubemap(@builtin(global_invocation_id) id: vec3u) {
  if (id.x >= params.dst_width || id.y >= params.dst_height) { return; }
  let latitude = ((f32(id.y) + 0.5) / f32(params.dst_height) - 0.5) * PI;
  let longitude = ((f32(id.x) + 0.5) / f32(params.dst_width) - 0.5) * 2.0 * PI;
  let x = cos(latitude) * sin(longitude);
  let y = sin(latitude);
  let z = cos(latitude) * cos(longitude);
  let face = face_of_ray(vec3f(x, y, z));
  // face_from_rig = rig_from_face^T: the face axes (columns) dotted with the ray.
  let r0 = params.faces[3 * face];
  let r1 = params.faces[3 * face + 1];
  let r2 = params.faces[3 * face + 2];
  let fx = r0.x * x + r1.x * y + r2.x * z;
  let fy = r0.y * x + r1.y * y + r2.y * z;
  let fz = r0.z * x + r1.z * y + r2.z * z;
  let half = f32(params.face_size) * 0.5;
  dst[id.y * params.dst_width + id.x] = sample(face, fx / fz * half + half, fy / fz * half + half);
}
