// VLFeat's numerical approximations used by SIFT (vl/mathop.h, vl/sift.c).
// They are part of the algorithm's definition (SIFT.md sections 4-6): using the
// same ones keeps the WGSL twin and the CPU path comparable, and they use only
// +, *, / so every IEEE-754 platform rounds them alike.
#pragma once

#include <cfloat>
#include <cmath>

namespace edgesfm {
namespace sift_math {

constexpr double kPi = 3.141592653589793;
constexpr float kTwoPiF = static_cast<float>(2.0 * kPi);

// vl_fast_atan2_f: a rational approximation, max error about 0.01 rad.
inline float FastAtan2(float y, float x) {
  const float c3 = 0.1821f;
  const float c1 = 0.9675f;
  const float abs_y = std::fabs(y) + FLT_EPSILON;
  float angle, r;
  if (x >= 0) {
    r = (x - abs_y) / (x + abs_y);
    angle = static_cast<float>(kPi / 4);
  } else {
    r = (x + abs_y) / (abs_y - x);
    angle = static_cast<float>(3 * kPi / 4);
  }
  angle += (c3 * r * r - c1) * r;
  return (y < 0) ? -angle : angle;
}

// vl_mod_2pi_f: wraps into [0, 2 pi] by repeated subtraction/addition.
inline float Mod2Pi(float x) {
  while (x > kTwoPiF) x -= kTwoPiF;
  while (x < 0.0f) x += kTwoPiF;
  return x;
}

// fast_expn: exp(-x) for x in [0, 25] by linear interpolation in a 257-entry table.
class FastExpn {
 public:
  static constexpr int kSize = 256;
  static constexpr double kMax = 25.0;
  FastExpn() {
    for (int k = 0; k <= kSize; ++k) table_[k] = std::exp(-k * (kMax / kSize));
  }
  double operator()(double x) const {
    if (x > kMax) return 0.0;
    x *= kSize / kMax;
    const int i = static_cast<int>(std::floor(x));
    const double r = x - i;
    const double a = table_[i];
    const double b = table_[i + 1];
    return a + r * (b - a);
  }

 private:
  double table_[kSize + 2] = {};
};

inline const FastExpn& Expn() {
  static const FastExpn instance;
  return instance;
}

}  // namespace sift_math
}  // namespace edgesfm
