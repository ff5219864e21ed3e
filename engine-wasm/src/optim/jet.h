// Forward-mode automatic differentiation with dual numbers ("jets"), as Ceres
// Solver's Jet: a value and its gradient with respect to N inputs. Bundle
// adjustment pushes jets through the templated camera models of
// scene/camera_models.h to get exact projection Jacobians without writing the
// derivative of every distortion model by hand.
//
// Only what the camera models use is defined: arithmetic, comparisons on the
// value, sqrt and atan2 (found by argument-dependent lookup).
#pragma once

#include <Eigen/Core>
#include <cmath>

namespace edgesfm {

template <int N>
struct Jet {
  double a = 0.0;                                                       // value
  Eigen::Matrix<double, N, 1> v = Eigen::Matrix<double, N, 1>::Zero();  // gradient

  Jet() = default;
  explicit Jet(double value) : a(value) {}
  Jet(double value, const Eigen::Matrix<double, N, 1>& grad) : a(value), v(grad) {}
  // The input variable number `k`: value `value`, gradient e_k.
  static Jet Variable(double value, int k) {
    Jet j(value);
    j.v[k] = 1.0;
    return j;
  }

  Jet& operator+=(const Jet& o) {
    a += o.a;
    v += o.v;
    return *this;
  }
  Jet& operator-=(const Jet& o) {
    a -= o.a;
    v -= o.v;
    return *this;
  }
  Jet& operator*=(const Jet& o) {
    v = v * o.a + o.v * a;
    a *= o.a;
    return *this;
  }
  Jet& operator/=(const Jet& o) {
    *this = *this / o;
    return *this;
  }
};

template <int N>
Jet<N> operator-(const Jet<N>& x) {
  return Jet<N>(-x.a, -x.v);
}
template <int N>
Jet<N> operator+(const Jet<N>& x, const Jet<N>& y) {
  return Jet<N>(x.a + y.a, x.v + y.v);
}
template <int N>
Jet<N> operator-(const Jet<N>& x, const Jet<N>& y) {
  return Jet<N>(x.a - y.a, x.v - y.v);
}
template <int N>
Jet<N> operator*(const Jet<N>& x, const Jet<N>& y) {
  return Jet<N>(x.a * y.a, x.v * y.a + y.v * x.a);
}
template <int N>
Jet<N> operator/(const Jet<N>& x, const Jet<N>& y) {
  const double inv = 1.0 / y.a;
  const double q = x.a * inv;
  return Jet<N>(q, (x.v - q * y.v) * inv);
}
template <int N>
Jet<N> operator+(const Jet<N>& x, double s) {
  return Jet<N>(x.a + s, x.v);
}
template <int N>
Jet<N> operator+(double s, const Jet<N>& x) {
  return Jet<N>(x.a + s, x.v);
}
template <int N>
Jet<N> operator-(const Jet<N>& x, double s) {
  return Jet<N>(x.a - s, x.v);
}
template <int N>
Jet<N> operator-(double s, const Jet<N>& x) {
  return Jet<N>(s - x.a, -x.v);
}
template <int N>
Jet<N> operator*(const Jet<N>& x, double s) {
  return Jet<N>(x.a * s, x.v * s);
}
template <int N>
Jet<N> operator*(double s, const Jet<N>& x) {
  return Jet<N>(x.a * s, x.v * s);
}
template <int N>
Jet<N> operator/(const Jet<N>& x, double s) {
  return Jet<N>(x.a / s, x.v / s);
}
template <int N>
Jet<N> operator/(double s, const Jet<N>& x) {
  const double q = s / x.a;
  return Jet<N>(q, x.v * (-q / x.a));
}

template <int N>
bool operator<(const Jet<N>& x, const Jet<N>& y) {
  return x.a < y.a;
}
template <int N>
bool operator>(const Jet<N>& x, const Jet<N>& y) {
  return x.a > y.a;
}
template <int N>
bool operator<=(const Jet<N>& x, const Jet<N>& y) {
  return x.a <= y.a;
}
template <int N>
bool operator>=(const Jet<N>& x, const Jet<N>& y) {
  return x.a >= y.a;
}

template <int N>
Jet<N> sqrt(const Jet<N>& x) {
  const double r = std::sqrt(x.a);
  return Jet<N>(r, x.v * (0.5 / r));
}
template <int N>
Jet<N> atan2(const Jet<N>& y, const Jet<N>& x) {
  // d atan2(y, x) = (x dy - y dx) / (x^2 + y^2)
  const double n = x.a * x.a + y.a * y.a;
  return Jet<N>(std::atan2(y.a, x.a), (y.v * x.a - x.v * y.a) / n);
}

}  // namespace edgesfm
