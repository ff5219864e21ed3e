#include "feature/sift_matcher.h"

#include <algorithm>
#include <cmath>

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

namespace edgesfm {

namespace {

constexpr int kDim = 128;

// Best and second-best dot product seen so far for one descriptor, updated in
// scan order with COLMAP's rule (strict >, so the first maximum wins).
struct NearestTwo {
  int32_t best = 0;
  int32_t second = 0;
  int32_t best_index = -1;
  inline void Update(int32_t dot, int32_t index) {
    if (dot > best) {
      second = best;
      best = dot;
      best_index = index;
    } else if (dot > second) {
      second = dot;
    }
  }
};

// Widened copies (int16) so the inner product is one multiply-add per pair of
// lanes; rows padded to a multiple of 4 with zeros (zero rows never win: best
// starts at 0 and updates need a strictly larger dot).
std::vector<int16_t> Widen(const uint8_t* d, size_t n, size_t padded_n) {
  std::vector<int16_t> out(padded_n * kDim, 0);
  for (size_t i = 0; i < n * kDim; ++i) out[i] = d[i];
  return out;
}

// dots[r][c] = <a_r, b_c> for a 4x4 tile. In wasm the tile is computed as two
// 2x4 halves: 8 accumulators + 6 operands fit the 16 SIMD registers of x86-64,
// so V8 does not spill inside the loop.
inline void DotTile4x4(const int16_t* a, const int16_t* b, int32_t dots[4][4]) {
#if defined(__wasm_simd128__)
  for (int half = 0; half < 4; half += 2) {
    const int16_t* a0 = a + half * kDim;
    const int16_t* a1 = a0 + kDim;
    v128_t acc[2][4];
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 4; ++c) acc[r][c] = wasm_i32x4_splat(0);
    for (int k = 0; k < kDim; k += 8) {
      const v128_t va0 = wasm_v128_load(a0 + k);
      const v128_t va1 = wasm_v128_load(a1 + k);
      for (int c = 0; c < 4; ++c) {
        const v128_t vb = wasm_v128_load(b + c * kDim + k);
        acc[0][c] = wasm_i32x4_add(acc[0][c], wasm_i32x4_dot_i16x8(va0, vb));
        acc[1][c] = wasm_i32x4_add(acc[1][c], wasm_i32x4_dot_i16x8(va1, vb));
      }
    }
    for (int r = 0; r < 2; ++r) {
      // Horizontal sums of four accumulators at once: transpose-add.
      const v128_t s01 = wasm_i32x4_add(wasm_i32x4_shuffle(acc[r][0], acc[r][1], 0, 4, 1, 5),
                                        wasm_i32x4_shuffle(acc[r][0], acc[r][1], 2, 6, 3, 7));
      const v128_t s23 = wasm_i32x4_add(wasm_i32x4_shuffle(acc[r][2], acc[r][3], 0, 4, 1, 5),
                                        wasm_i32x4_shuffle(acc[r][2], acc[r][3], 2, 6, 3, 7));
      const v128_t sums = wasm_i32x4_add(wasm_i32x4_shuffle(s01, s23, 0, 1, 4, 5),
                                         wasm_i32x4_shuffle(s01, s23, 2, 3, 6, 7));
      wasm_v128_store(dots[half + r], sums);
    }
  }
#else
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 4; ++c) {
      int32_t sum = 0;
      const int16_t* x = a + r * kDim;
      const int16_t* y = b + c * kDim;
      for (int k = 0; k < kDim; ++k) sum += static_cast<int32_t>(x[k]) * y[k];
      dots[r][c] = sum;
    }
  }
#endif
}

// COLMAP's acceptance of a one-way nearest neighbour.
bool Accept(const NearestTwo& nn, const SiftMatchingOptions& options) {
  if (nn.best_index < 0) return false;
  constexpr float kDistNorm = 1.0f / (512.0f * 512.0f);
  const float best = std::acos(std::min(kDistNorm * nn.best, 1.0f));
  if (best > options.max_distance) return false;
  const float second = std::acos(std::min(kDistNorm * nn.second, 1.0f));
  // >= so that best == second (ambiguous) is rejected.
  if (best >= static_cast<float>(options.max_ratio) * second) return false;
  return true;
}

}  // namespace

std::vector<DescriptorMatch> MatchSiftDescriptors(const uint8_t* descriptors1, size_t num1,
                                                  const uint8_t* descriptors2, size_t num2,
                                                  const SiftMatchingOptions& options) {
  std::vector<DescriptorMatch> matches;
  if (num1 == 0 || num2 == 0) return matches;
  const size_t n1 = (num1 + 3) / 4 * 4;
  const size_t n2 = (num2 + 3) / 4 * 4;
  const std::vector<int16_t> a = Widen(descriptors1, num1, n1);
  const std::vector<int16_t> b = Widen(descriptors2, num2, n2);
  std::vector<NearestTwo> rows(num1);
  std::vector<NearestTwo> cols(num2);

  // Columns in chunks that stay in L1/L2 while every row block passes over
  // them. Rows see columns in ascending order and columns see rows in ascending
  // order, which is the scan order COLMAP's tie rule depends on.
  constexpr size_t kColumnChunk = 128;
  int32_t dots[4][4];
  for (size_t c0 = 0; c0 < n2; c0 += kColumnChunk) {
    const size_t c1 = std::min(n2, c0 + kColumnChunk);
    for (size_t r = 0; r < n1; r += 4) {
      const int16_t* ra = a.data() + r * kDim;
      for (size_t c = c0; c < c1; c += 4) {
        DotTile4x4(ra, b.data() + c * kDim, dots);
        for (int i = 0; i < 4; ++i) {
          if (r + i >= num1) break;
          for (int j = 0; j < 4; ++j) {
            if (c + j >= num2) break;
            rows[r + i].Update(dots[i][j], static_cast<int32_t>(c + j));
            cols[c + j].Update(dots[i][j], static_cast<int32_t>(r + i));
          }
        }
      }
    }
  }

  std::vector<char> col_ok;
  if (options.cross_check) {
    col_ok.resize(num2);
    for (size_t j = 0; j < num2; ++j) col_ok[j] = Accept(cols[j], options);
  }
  for (size_t i = 0; i < num1; ++i) {
    if (!Accept(rows[i], options)) continue;
    const uint32_t j = static_cast<uint32_t>(rows[i].best_index);
    if (options.cross_check && !(col_ok[j] && cols[j].best_index == static_cast<int32_t>(i)))
      continue;
    matches.push_back({static_cast<uint32_t>(i), j});
  }
  return matches;
}

}  // namespace edgesfm
