// Brute-force nearest neighbours of uint8 SIFT descriptors by integer dot product (COLMAP's
// MatchSiftFeaturesCPUBruteForce distance; engine-wasm/src/feature/SIFT.md section 8).
//
// Each workgroup holds 64 query descriptors (one per thread, in registers) and streams the
// train set through workgroup memory in tiles of 64 descriptors. Every query scans train indices
// in ascending order with COLMAP's strict comparisons, so best/second-best and ties are exactly
// the CPU's. The ratio and distance tests and the cross-check run on these results on the host;
// the reverse direction is the same kernel with the sets swapped.

struct MatchParams {
  num_query: u32,
  num_train: u32,
}

const WORDS: u32 = 32u;  // 128 bytes as 32 little-endian u32
const TILE: u32 = 64u;

@group(0) @binding(0) var<uniform> params: MatchParams;
@group(0) @binding(1) var<storage, read> query: array<u32>;
@group(0) @binding(2) var<storage, read> train: array<u32>;
// Per query: (best train index or 0xffffffff, best dot, second-best dot, 0).
@group(0) @binding(3) var<storage, read_write> nearest: array<vec4u>;

var<workgroup> tile: array<u32, TILE * WORDS>;

// Portable byte-wise dot product of 4 packed u8. The host swaps in the `dot4U8Packed` builtin
// when the implementation has the packed_4x8_integer_dot_product extension (same result).
fn dot_u8x4(a: u32, b: u32) -> u32 {
  return (a & 0xffu) * (b & 0xffu) + ((a >> 8u) & 0xffu) * ((b >> 8u) & 0xffu)
       + ((a >> 16u) & 0xffu) * ((b >> 16u) & 0xffu) + (a >> 24u) * (b >> 24u);
}

@compute @workgroup_size(64)
fn nearest_two(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_index) lid: u32) {
  let q = (wg.y * nwg.x + wg.x) * TILE + lid;
  let has_query = q < params.num_query;
  var mine: array<u32, 32>;
  if (has_query) {
    for (var i = 0u; i < WORDS; i++) { mine[i] = query[q * WORDS + i]; }
  }
  var best_index = 0xffffffffu;
  var best = 0u;
  var second = 0u;
  for (var start = 0u; start < params.num_train; start += TILE) {
    let n = min(TILE, params.num_train - start);
    workgroupBarrier();
    for (var i = lid; i < n * WORDS; i += TILE) { tile[i] = train[start * WORDS + i]; }
    workgroupBarrier();
    if (has_query) {
      for (var j = 0u; j < n; j++) {
        var d = 0u;
        for (var i = 0u; i < WORDS; i++) { d += dot_u8x4(mine[i], tile[j * WORDS + i]); }
        if (d > best) {
          best_index = start + j;
          second = best;
          best = d;
        } else if (d > second) {
          second = d;
        }
      }
    }
  }
  if (has_query) { nearest[q] = vec4u(best_index, best, second, 0u); }
}
