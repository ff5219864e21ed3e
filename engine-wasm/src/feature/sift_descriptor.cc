#include "feature/sift_descriptor.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "feature/sift_math.h"

namespace edgesfm {

using sift_math::FastAtan2;
using sift_math::Mod2Pi;

void ComputeGradients(const float* level, int width, int height, std::vector<float>* grad) {
  const int w = width;
  const int h = height;
  grad->resize(2 * static_cast<size_t>(w) * h);
  float* out = grad->data();
  const float two_pi = sift_math::kTwoPiF;
  for (int y = 0; y < h; ++y) {
    const float* row = level + static_cast<size_t>(y) * w;
    const float* up = level + static_cast<size_t>(y > 0 ? y - 1 : y) * w;
    const float* down = level + static_cast<size_t>(y < h - 1 ? y + 1 : y) * w;
    // Central differences inside, one-sided on the first/last row and column.
    const float y_scale = (y > 0 && y < h - 1) ? 0.5f : 1.0f;
    float* o = out + 2 * static_cast<size_t>(y) * w;
    for (int x = 0; x < w; ++x) {
      float gx;
      if (x == 0) {
        gx = row[1] - row[0];
      } else if (x == w - 1) {
        gx = row[x] - row[x - 1];
      } else {
        gx = 0.5f * (row[x + 1] - row[x - 1]);
      }
      const float gy = y_scale * (down[x] - up[x]);
      o[2 * x] = std::sqrt(gx * gx + gy * gy);
      o[2 * x + 1] = Mod2Pi(FastAtan2(gy, gx) + two_pi);
    }
  }
}

int ComputeOrientations(const float* grad, int width, int height, const SiftDetection& kp,
                        double angles[4]) {
  constexpr int kBins = SiftConstants::kOrientationBins;
  const double x = kp.x;
  const double y = kp.y;
  const double sigma = kp.sigma;
  const int xi = static_cast<int>(x + 0.5);
  const int yi = static_cast<int>(y + 0.5);
  const double sigma_w = SiftConstants::kOrientationWindowFactor * sigma;
  const int radius = std::max(static_cast<int>(std::floor(3.0 * sigma_w)), 1);
  if (xi < 0 || xi > width - 1 || yi < 0 || yi > height - 1) return 0;

  double hist[kBins] = {};
  const sift_math::FastExpn& expn = sift_math::Expn();
  for (int ys = std::max(-radius, -yi); ys <= std::min(radius, height - 1 - yi); ++ys) {
    const float* row = grad + 2 * (static_cast<size_t>(yi + ys) * width);
    for (int xs = std::max(-radius, -xi); xs <= std::min(radius, width - 1 - xi); ++xs) {
      const double dx = static_cast<double>(xi + xs) - x;
      const double dy = static_cast<double>(yi + ys) - y;
      const double r2 = dx * dx + dy * dy;
      if (r2 >= radius * radius + 0.6) continue;
      const double weight = expn(r2 / (2 * sigma_w * sigma_w));
      const double mod = row[2 * (xi + xs)];
      const double ang = row[2 * (xi + xs) + 1];
      const int bin = static_cast<int>(std::floor(kBins * ang / (2 * sift_math::kPi)));
      hist[bin % kBins] += mod * weight;
    }
  }

  for (int pass = 0; pass < SiftConstants::kOrientationSmoothingPasses; ++pass) {
    double prev = hist[kBins - 1];
    const double first = hist[0];
    int i = 0;
    for (; i < kBins - 1; ++i) {
      const double smoothed = (prev + hist[i] + hist[i + 1]) / 3.0;
      prev = hist[i];
      hist[i] = smoothed;
    }
    hist[i] = (prev + hist[i] + first) / 3.0;
  }

  double max_h = 0;
  for (double v : hist) max_h = std::max(max_h, v);
  int count = 0;
  for (int i = 0; i < kBins; ++i) {
    const double h0 = hist[i];
    const double hm = hist[(i - 1 + kBins) % kBins];
    const double hp = hist[(i + 1) % kBins];
    if (h0 > SiftConstants::kOrientationPeakRatio * max_h && h0 > hm && h0 > hp) {
      const double di = -0.5 * (hp - hm) / (hp + hm - 2 * h0);
      angles[count++] = 2 * sift_math::kPi * (i + di + 0.5) / kBins;
      if (count == SiftConstants::kMaxOrientationsVLFeat) break;
    }
  }
  return count;
}

namespace {

void NormalizeL2WithEpsilon(float* v) {
  float norm = 0.0f;
  for (int i = 0; i < 128; ++i) norm += v[i] * v[i];
  norm = std::sqrt(norm) + FLT_EPSILON;
  for (int i = 0; i < 128; ++i) v[i] /= norm;
}

}  // namespace

void ComputeDescriptor(const float* grad, int width, int height, const SiftDetection& kp,
                       double angle0, float descriptor[128]) {
  constexpr int kNBO = SiftConstants::kOrientationBinsDescriptor;
  constexpr int kNBP = SiftConstants::kSpatialBins;
  std::memset(descriptor, 0, sizeof(float) * 128);
  const double x = kp.x;
  const double y = kp.y;
  const int xi = static_cast<int>(x + 0.5);
  const int yi = static_cast<int>(y + 0.5);
  if (xi < 0 || xi >= width || yi < 0 || yi >= height - 1) return;

  const double st0 = std::sin(angle0);
  const double ct0 = std::cos(angle0);
  const double sbp = SiftConstants::kMagnification * kp.sigma + DBL_EPSILON;
  const int radius = static_cast<int>(std::floor(std::sqrt(2.0) * sbp * (kNBP + 1) / 2.0 + 0.5));
  const float wsigma = static_cast<float>(SiftConstants::kDescriptorWindowSigma);
  const float angle0f = static_cast<float>(angle0);
  const sift_math::FastExpn& expn = sift_math::Expn();
  // dpt: the bin of centre (x, y) = (0, 0) in VLFeat's layout.
  float* centre = descriptor + (kNBP / 2) * kNBO * kNBP + (kNBP / 2) * kNBO;

  for (int dyi = std::max(-radius, 1 - yi); dyi <= std::min(radius, height - yi - 2); ++dyi) {
    const float* row = grad + 2 * (static_cast<size_t>(yi + dyi) * width);
    for (int dxi = std::max(-radius, 1 - xi); dxi <= std::min(radius, width - xi - 2); ++dxi) {
      const float dx = static_cast<float>(xi + dxi - x);
      const float dy = static_cast<float>(yi + dyi - y);
      const float nx = static_cast<float>((ct0 * dx + st0 * dy) / sbp);
      const float ny = static_cast<float>((-st0 * dx + ct0 * dy) / sbp);
      // Samples outside [-2.5, 2.5)^2 in bin units reach no bin: skipping them
      // is exact and halves the work (the square window is rotated).
      if (nx < -2.5f || nx >= 2.5f || ny < -2.5f || ny >= 2.5f) continue;
      const float mod = row[2 * (xi + dxi)];
      const float angle = row[2 * (xi + dxi) + 1];
      const float theta = Mod2Pi(angle - angle0f);
      const float nt = static_cast<float>(kNBO * theta / (2 * sift_math::kPi));
      const float win = static_cast<float>(expn((nx * nx + ny * ny) / (2.0 * wsigma * wsigma)));
      const int binx = static_cast<int>(std::floor(nx - 0.5f));
      const int biny = static_cast<int>(std::floor(ny - 0.5f));
      const int bint = static_cast<int>(std::floor(nt));
      const float rbinx = nx - (binx + 0.5f);
      const float rbiny = ny - (biny + 0.5f);
      const float rbint = nt - bint;
      for (int dbinx = 0; dbinx < 2; ++dbinx) {
        for (int dbiny = 0; dbiny < 2; ++dbiny) {
          for (int dbint = 0; dbint < 2; ++dbint) {
            if (binx + dbinx >= -(kNBP / 2) && binx + dbinx < (kNBP / 2) &&
                biny + dbiny >= -(kNBP / 2) && biny + dbiny < (kNBP / 2)) {
              const float weight = win * mod * std::fabs(1 - dbinx - rbinx) *
                                   std::fabs(1 - dbiny - rbiny) * std::fabs(1 - dbint - rbint);
              centre[(bint + dbint) % kNBO + (biny + dbiny) * kNBO * kNBP + (binx + dbinx) * kNBO] +=
                  weight;
            }
          }
        }
      }
    }
  }

  NormalizeL2WithEpsilon(descriptor);
  for (int i = 0; i < 128; ++i) descriptor[i] = std::min(descriptor[i], SiftConstants::kDescriptorClamp);
  NormalizeL2WithEpsilon(descriptor);
}

void QuantizeDescriptor(const float descriptor[128], SiftNormalization normalization, uint8_t out[128]) {
  float v[128];
  std::memcpy(v, descriptor, sizeof(v));
  if (normalization == SiftNormalization::kL2) {
    float norm = 0.0f;
    for (float e : v) norm += e * e;
    norm = std::sqrt(norm);
    if (norm > 0) for (float& e : v) e /= norm;
  } else {
    float l1 = 0.0f;
    for (float e : v) l1 += std::fabs(e);
    if (l1 > 0) for (float& e : v) e = std::sqrt(e / l1);
  }
  // VLFeat's orientation bin t of each cell goes to (8 - t) mod 8 (COLMAP's
  // TransformVLFeatToUBCFeatureDescriptors); cells keep their order.
  for (int cell = 0; cell < 16; ++cell) {
    for (int t = 0; t < 8; ++t) {
      const float scaled = std::round(SiftConstants::kQuantisationScale * v[8 * cell + t]);
      out[8 * cell + (8 - t) % 8] = static_cast<uint8_t>(std::min(255.0f, std::max(0.0f, scaled)));
    }
  }
}

}  // namespace edgesfm
