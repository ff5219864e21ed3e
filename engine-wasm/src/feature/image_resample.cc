#include "feature/image_resample.h"

#include <algorithm>
#include <cmath>

namespace edgesfm {

namespace {

// One 1-D pass of VLFeat's copy_and_upsample_rows without the transposition.
void UpsampleRow(const float* src, int n, size_t src_stride, float* dst, size_t dst_stride) {
  for (int i = 0; i + 1 < n; ++i) {
    const float a = src[i * src_stride];
    const float b = src[(i + 1) * src_stride];
    dst[(2 * i) * dst_stride] = a;
    dst[(2 * i + 1) * dst_stride] = 0.5f * (a + b);
  }
  const float last = src[(n - 1) * src_stride];
  dst[(2 * n - 2) * dst_stride] = last;
  dst[(2 * n - 1) * dst_stride] = last;
}

}  // namespace

void Upsample2x(const float* src, int width, int height, float* dst, std::vector<float>* scratch) {
  const int up_width = 2 * width;
  scratch->resize(static_cast<size_t>(up_width) * height);
  float* wide = scratch->data();
  for (int y = 0; y < height; ++y) {
    UpsampleRow(src + static_cast<size_t>(y) * width, width, 1,
                wide + static_cast<size_t>(y) * up_width, 1);
  }
  // Along y, whole rows at a time (contiguous, vectorisable).
  for (int y = 0; y < height; ++y) {
    const float* a = wide + static_cast<size_t>(y) * up_width;
    const float* b = wide + static_cast<size_t>(std::min(y + 1, height - 1)) * up_width;
    float* even = dst + static_cast<size_t>(2 * y) * up_width;
    float* odd = even + up_width;
    for (int x = 0; x < up_width; ++x) {
      even[x] = a[x];
      odd[x] = 0.5f * (a[x] + b[x]);
    }
  }
}

void Subsample2x(const float* src, int width, int height, float* dst) {
  const int w = width / 2;
  const int h = height / 2;
  for (int y = 0; y < h; ++y) {
    const float* in = src + static_cast<size_t>(2 * y) * width;
    float* out = dst + static_cast<size_t>(y) * w;
    for (int x = 0; x < w; ++x) out[x] = in[2 * x];
  }
}

namespace {

struct TentWeights {
  std::vector<int> first;      // first source index per output sample
  std::vector<int> count;      // number of taps
  std::vector<float> weights;  // count[i] taps per output, concatenated
  std::vector<size_t> offset;
};

TentWeights MakeTentWeights(int in_size, int out_size) {
  TentWeights t;
  const double scale = static_cast<double>(in_size) / out_size;  // > 1 when reducing
  const double support = std::max(1.0, scale);                   // tent half-width in source px
  for (int i = 0; i < out_size; ++i) {
    const double centre = (i + 0.5) * scale - 0.5;
    const int lo = std::max(0, static_cast<int>(std::floor(centre - support)) + 1);
    const int hi = std::min(in_size - 1, static_cast<int>(std::ceil(centre + support)) - 1);
    t.first.push_back(lo);
    t.offset.push_back(t.weights.size());
    double sum = 0.0;
    std::vector<double> w;
    for (int s = lo; s <= hi; ++s) {
      const double v = std::max(0.0, 1.0 - std::fabs(s - centre) / support);
      w.push_back(v);
      sum += v;
    }
    if (w.empty() || sum <= 0.0) {  // degenerate: nearest sample
      const int s = std::min(in_size - 1, std::max(0, static_cast<int>(std::lround(centre))));
      t.first.back() = s;
      w.assign(1, 1.0);
      sum = 1.0;
    }
    t.count.push_back(static_cast<int>(w.size()));
    for (double v : w) t.weights.push_back(static_cast<float>(v / sum));
  }
  return t;
}

}  // namespace

void DownscaleTent(const float* src, int width, int height, float* dst, int new_width,
                   int new_height) {
  const TentWeights wx = MakeTentWeights(width, new_width);
  const TentWeights wy = MakeTentWeights(height, new_height);
  std::vector<float> narrow(static_cast<size_t>(new_width) * height);
  for (int y = 0; y < height; ++y) {
    const float* in = src + static_cast<size_t>(y) * width;
    float* out = narrow.data() + static_cast<size_t>(y) * new_width;
    for (int x = 0; x < new_width; ++x) {
      const float* w = wx.weights.data() + wx.offset[x];
      float acc = 0.0f;
      for (int k = 0; k < wx.count[x]; ++k) acc += w[k] * in[wx.first[x] + k];
      out[x] = acc;
    }
  }
  for (int y = 0; y < new_height; ++y) {
    float* out = dst + static_cast<size_t>(y) * new_width;
    std::fill(out, out + new_width, 0.0f);
    const float* w = wy.weights.data() + wy.offset[y];
    for (int k = 0; k < wy.count[y]; ++k) {
      const float* in = narrow.data() + static_cast<size_t>(wy.first[y] + k) * new_width;
      for (int x = 0; x < new_width; ++x) out[x] += w[k] * in[x];
    }
  }
}

}  // namespace edgesfm
