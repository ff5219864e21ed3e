// Camera models in COLMAP's layout (ids, names, parameter order), templated on the
// scalar so bundle adjustment can differentiate projection with its own Jet type.
//
// Conventions (as COLMAP):
// - Camera frame: x right, y down, z forward. A camera-frame point is (u, v, w).
// - Image frame: pixel centres at integer + 0.5; the top-left pixel covers [0, 1)^2,
//   so the principal point of an ideal camera is (width / 2, height / 2).
// - `ImgFromCam(params, u, v, w, width, height, &x, &y)` projects a camera-frame
//   point (not necessarily normalised) to pixels; it returns false when the point
//   cannot be imaged (behind a perspective camera, or the zero vector).
// - `CamFromImg(params, x, y, width, height, &u, &v, &w)` returns the viewing ray of a
//   pixel: (u, v, 1) for perspective models (distortion removed iteratively, like
//   COLMAP's IterativeUndistortion), a unit vector for the fisheye and spherical
//   models (so rays beyond 90 degrees from the axis stay representable).
// - `width` and `height` (pixels) are only used by SPHERICAL, which has no
//   parameters; every model takes them so generic code calls all models alike.
//
// Parameter layouts (identical to COLMAP, ids too):
//   0 SIMPLE_PINHOLE        f, cx, cy
//   1 PINHOLE               fx, fy, cx, cy
//   2 SIMPLE_RADIAL         f, cx, cy, k
//   3 RADIAL                f, cx, cy, k1, k2
//   4 OPENCV                fx, fy, cx, cy, k1, k2, p1, p2
//   5 OPENCV_FISHEYE        fx, fy, cx, cy, k1, k2, k3, k4
//   6 FULL_OPENCV           fx, fy, cx, cy, k1, k2, p1, p2, k3, k4, k5, k6
//   8 SIMPLE_RADIAL_FISHEYE f, cx, cy, k
//   9 RADIAL_FISHEYE        f, cx, cy, k1, k2
// 100 SPHERICAL             (none) equirectangular panorama covering 360 x 180
//                           degrees: x = (longitude / 2pi + 1/2) width,
//                           y = (latitude / pi + 1/2) height, longitude = atan2(u, w),
//                           latitude = atan2(v, hypot(u, w)). Not a COLMAP model; its
//                           id is outside COLMAP's range so it never collides.
// COLMAP's FOV (7) and THIN_PRISM_FISHEYE (10) are not implemented.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace edgesfm {

enum class CameraModelId : int {
  kInvalid = -1,
  kSimplePinhole = 0,
  kPinhole = 1,
  kSimpleRadial = 2,
  kRadial = 3,
  kOpenCV = 4,
  kOpenCVFisheye = 5,
  kFullOpenCV = 6,
  kSimpleRadialFisheye = 8,
  kRadialFisheye = 9,
  kSpherical = 100,
};

namespace camera_model_internal {

// Below this radius the distortion terms are numerically zero and derivatives of
// sqrt/atan at 0 would be infinite, so the identity is used instead.
constexpr double kMinRadius = 1e-12;

// Newton iterations for undistortion; COLMAP uses the same budget.
constexpr int kMaxUndistortionIterations = 100;
constexpr double kUndistortionTolerance = 1e-10;

constexpr double kPi = 3.14159265358979323846;

using std::atan2;
using std::cos;
using std::sin;
using std::sqrt;

// |a| written with a comparison so it works for any scalar with operator< and unary -
// (BA's Jet types included).
template <typename T>
T abs_value(const T& a) {
  return a < T(0) ? -a : a;
}

// Inverts x + distortion(x) = x_distorted by Newton's method with a central-difference
// Jacobian, as COLMAP's IterativeUndistortion. `distortion(extra, u, v, &du, &dv)`.
template <typename DistortionFn>
void IterativeUndistortion(DistortionFn distortion, const double* extra, double* u, double* v) {
  const double xd = *u;
  const double yd = *v;
  double x = xd;
  double y = yd;
  for (int i = 0; i < kMaxUndistortionIterations; ++i) {
    const double step_x = std::max(std::numeric_limits<double>::epsilon(), std::abs(x) * 1e-6);
    const double step_y = std::max(std::numeric_limits<double>::epsilon(), std::abs(y) * 1e-6);
    double dx, dy, dx0b, dy0b, dx0f, dy0f, dx1b, dy1b, dx1f, dy1f;
    distortion(extra, x, y, &dx, &dy);
    distortion(extra, x - step_x, y, &dx0b, &dy0b);
    distortion(extra, x + step_x, y, &dx0f, &dy0f);
    distortion(extra, x, y - step_y, &dx1b, &dy1b);
    distortion(extra, x, y + step_y, &dx1f, &dy1f);
    // Jacobian of x + distortion(x).
    const double j00 = 1 + (dx0f - dx0b) / (2 * step_x);
    const double j01 = (dx1f - dx1b) / (2 * step_y);
    const double j10 = (dy0f - dy0b) / (2 * step_x);
    const double j11 = 1 + (dy1f - dy1b) / (2 * step_y);
    const double rx = x + dx - xd;
    const double ry = y + dy - yd;
    const double det = j00 * j11 - j01 * j10;
    if (std::abs(det) < 1e-300) break;
    const double step_u = (j11 * rx - j01 * ry) / det;
    const double step_v = (-j10 * rx + j00 * ry) / det;
    x -= step_u;
    y -= step_v;
    if (step_u * step_u + step_v * step_v <
        kUndistortionTolerance * kUndistortionTolerance * (x * x + y * y + 1e-20)) {
      break;
    }
  }
  *u = x;
  *v = y;
}

// Solves theta * (1 + k1 theta^2 + k2 theta^4 + ...) = theta_d for theta (Newton),
// the inverse of the equidistant fisheye distortion. `coeffs` holds k1..kn.
template <int N>
double InvertFisheyeTheta(const double* coeffs, double theta_d) {
  double theta = theta_d;
  for (int i = 0; i < kMaxUndistortionIterations; ++i) {
    const double t2 = theta * theta;
    double poly = 1, dpoly = 0, t2k = 1;  // t2k = theta^(2k)
    for (int k = 0; k < N; ++k) {
      // d/dtheta of k_k theta^(2k+3) is (2k+3) k_k theta^(2k+2)
      dpoly += (2 * k + 3) * coeffs[k] * t2k * t2;
      t2k *= t2;
      poly += coeffs[k] * t2k;
    }
    const double f = theta * poly - theta_d;
    const double df = 1 + dpoly;
    if (std::abs(df) < 1e-300) break;
    const double step = f / df;
    theta -= step;
    if (std::abs(step) < kUndistortionTolerance * (std::abs(theta) + 1e-20)) break;
  }
  return theta;
}

// Shared by the perspective models: project with w, apply the model's distortion on
// the normalised plane, then focal length and principal point.
template <typename Model, typename T>
bool PerspectiveImgFromCam(const T* params, T u, T v, T w, T* x, T* y) {
  if (!(w > T(std::numeric_limits<double>::epsilon()))) return false;
  const T un = u / w;
  const T vn = v / w;
  T du, dv;
  Model::Distortion(params + Model::kExtraParamsIdx, un, vn, &du, &dv);
  const T xn = un + du;
  const T yn = vn + dv;
  *x = params[Model::kFocalLengthIdxs[0]] * xn + params[Model::kPrincipalPointIdxs[0]];
  *y = params[Model::kFocalLengthIdxs[Model::kFocalLengthIdxs.size() - 1]] * yn +
       params[Model::kPrincipalPointIdxs[1]];
  return true;
}

template <typename Model>
void PerspectiveCamFromImg(const double* params, double x, double y, double* u, double* v,
                           double* w) {
  const double fx = params[Model::kFocalLengthIdxs[0]];
  const double fy = params[Model::kFocalLengthIdxs[Model::kFocalLengthIdxs.size() - 1]];
  *u = (x - params[Model::kPrincipalPointIdxs[0]]) / fx;
  *v = (y - params[Model::kPrincipalPointIdxs[1]]) / fy;
  *w = 1;
  if (Model::kNumExtraParams > 0) {
    IterativeUndistortion([](const double* extra, double a, double b, double* da,
                             double* db) { Model::Distortion(extra, a, b, da, db); },
                          params + Model::kExtraParamsIdx, u, v);
  }
}

// Shared by the fisheye models (equidistant projection): theta is the angle from the
// optical axis, its distorted value theta_d maps linearly to the image radius.
// `ThetaDistortion(extra, theta)` returns theta_d.
template <typename Model, typename T>
bool FisheyeImgFromCam(const T* params, T u, T v, T w, T* x, T* y) {
  const T r = sqrt(u * u + v * v);
  T xn, yn;
  if (r > T(kMinRadius) * (abs_value(w) + T(1))) {
    const T theta = atan2(r, w);
    const T theta_d = Model::ThetaDistortion(params + Model::kExtraParamsIdx, theta);
    xn = theta_d * u / r;
    yn = theta_d * v / r;
  } else {
    if (!(w > T(0))) return false;
    // On the axis the equidistant model equals the pinhole one to first order.
    xn = u / w;
    yn = v / w;
  }
  *x = params[Model::kFocalLengthIdxs[0]] * xn + params[Model::kPrincipalPointIdxs[0]];
  *y = params[Model::kFocalLengthIdxs[Model::kFocalLengthIdxs.size() - 1]] * yn +
       params[Model::kPrincipalPointIdxs[1]];
  return true;
}

template <typename Model>
void FisheyeCamFromImg(const double* params, double x, double y, double* u, double* v, double* w) {
  const double fx = params[Model::kFocalLengthIdxs[0]];
  const double fy = params[Model::kFocalLengthIdxs[Model::kFocalLengthIdxs.size() - 1]];
  const double xn = (x - params[Model::kPrincipalPointIdxs[0]]) / fx;
  const double yn = (y - params[Model::kPrincipalPointIdxs[1]]) / fy;
  const double theta_d = std::sqrt(xn * xn + yn * yn);
  if (theta_d < kMinRadius) {
    *u = xn;
    *v = yn;
    *w = 1;
    return;
  }
  const double theta =
      InvertFisheyeTheta<Model::kNumExtraParams>(params + Model::kExtraParamsIdx, theta_d);
  const double s = std::sin(theta) / theta_d;
  *u = xn * s;
  *v = yn * s;
  *w = std::cos(theta);
}

}  // namespace camera_model_internal

// Every model exposes:
//   kModelId, kModelName, kNumParams, kParamsInfo,
//   kFocalLengthIdxs, kPrincipalPointIdxs, kExtraParamsIdxs (std::array of indices),
//   ImgFromCam (templated), CamFromImg (double).

// Perspective models: project with w, apply the model's `Distortion` on the normalised
// plane, then focal length and principal point. Derived models supply the layout and
// `Distortion(extra, u, v, &du, &dv)`.
template <typename Model>
struct PerspectiveCameraModel {
  template <typename T>
  static bool ImgFromCam(const T* params, T u, T v, T w, double /*width*/, double /*height*/, T* x,
                         T* y) {
    return camera_model_internal::PerspectiveImgFromCam<Model>(params, u, v, w, x, y);
  }
  static void CamFromImg(const double* params, double x, double y, double /*width*/,
                         double /*height*/, double* u, double* v, double* w) {
    camera_model_internal::PerspectiveCamFromImg<Model>(params, x, y, u, v, w);
  }
};

// Fisheye models (equidistant projection): derived models supply the layout and
// `ThetaDistortion(extra, theta)`.
template <typename Model>
struct FisheyeCameraModel {
  template <typename T>
  static bool ImgFromCam(const T* params, T u, T v, T w, double /*width*/, double /*height*/, T* x,
                         T* y) {
    return camera_model_internal::FisheyeImgFromCam<Model>(params, u, v, w, x, y);
  }
  static void CamFromImg(const double* params, double x, double y, double /*width*/,
                         double /*height*/, double* u, double* v, double* w) {
    camera_model_internal::FisheyeCamFromImg<Model>(params, x, y, u, v, w);
  }
};

struct SimplePinholeCameraModel : PerspectiveCameraModel<SimplePinholeCameraModel> {
  static constexpr CameraModelId kModelId = CameraModelId::kSimplePinhole;
  static constexpr const char* kModelName = "SIMPLE_PINHOLE";
  static constexpr int kNumParams = 3;
  static constexpr const char* kParamsInfo = "f, cx, cy";
  static constexpr std::array<int, 1> kFocalLengthIdxs{0};
  static constexpr std::array<int, 2> kPrincipalPointIdxs{1, 2};
  static constexpr std::array<int, 0> kExtraParamsIdxs{};
  static constexpr int kExtraParamsIdx = 3;
  static constexpr int kNumExtraParams = 0;

  template <typename T>
  static void Distortion(const T*, T, T, T* du, T* dv) {
    *du = T(0);
    *dv = T(0);
  }
};

struct PinholeCameraModel : PerspectiveCameraModel<PinholeCameraModel> {
  static constexpr CameraModelId kModelId = CameraModelId::kPinhole;
  static constexpr const char* kModelName = "PINHOLE";
  static constexpr int kNumParams = 4;
  static constexpr const char* kParamsInfo = "fx, fy, cx, cy";
  static constexpr std::array<int, 2> kFocalLengthIdxs{0, 1};
  static constexpr std::array<int, 2> kPrincipalPointIdxs{2, 3};
  static constexpr std::array<int, 0> kExtraParamsIdxs{};
  static constexpr int kExtraParamsIdx = 4;
  static constexpr int kNumExtraParams = 0;

  template <typename T>
  static void Distortion(const T*, T, T, T* du, T* dv) {
    *du = T(0);
    *dv = T(0);
  }
};

// Radial distortion with one coefficient: d = k r^2.
struct SimpleRadialCameraModel : PerspectiveCameraModel<SimpleRadialCameraModel> {
  static constexpr CameraModelId kModelId = CameraModelId::kSimpleRadial;
  static constexpr const char* kModelName = "SIMPLE_RADIAL";
  static constexpr int kNumParams = 4;
  static constexpr const char* kParamsInfo = "f, cx, cy, k";
  static constexpr std::array<int, 1> kFocalLengthIdxs{0};
  static constexpr std::array<int, 2> kPrincipalPointIdxs{1, 2};
  static constexpr std::array<int, 1> kExtraParamsIdxs{3};
  static constexpr int kExtraParamsIdx = 3;
  static constexpr int kNumExtraParams = 1;

  template <typename T>
  static void Distortion(const T* extra, T u, T v, T* du, T* dv) {
    const T radial = extra[0] * (u * u + v * v);
    *du = u * radial;
    *dv = v * radial;
  }
};

// Radial distortion with two coefficients: d = k1 r^2 + k2 r^4.
struct RadialCameraModel : PerspectiveCameraModel<RadialCameraModel> {
  static constexpr CameraModelId kModelId = CameraModelId::kRadial;
  static constexpr const char* kModelName = "RADIAL";
  static constexpr int kNumParams = 5;
  static constexpr const char* kParamsInfo = "f, cx, cy, k1, k2";
  static constexpr std::array<int, 1> kFocalLengthIdxs{0};
  static constexpr std::array<int, 2> kPrincipalPointIdxs{1, 2};
  static constexpr std::array<int, 2> kExtraParamsIdxs{3, 4};
  static constexpr int kExtraParamsIdx = 3;
  static constexpr int kNumExtraParams = 2;

  template <typename T>
  static void Distortion(const T* extra, T u, T v, T* du, T* dv) {
    const T r2 = u * u + v * v;
    const T radial = extra[0] * r2 + extra[1] * r2 * r2;
    *du = u * radial;
    *dv = v * radial;
  }
};

// OpenCV's model with two radial (k1, k2) and two tangential (p1, p2) coefficients.
struct OpenCVCameraModel : PerspectiveCameraModel<OpenCVCameraModel> {
  static constexpr CameraModelId kModelId = CameraModelId::kOpenCV;
  static constexpr const char* kModelName = "OPENCV";
  static constexpr int kNumParams = 8;
  static constexpr const char* kParamsInfo = "fx, fy, cx, cy, k1, k2, p1, p2";
  static constexpr std::array<int, 2> kFocalLengthIdxs{0, 1};
  static constexpr std::array<int, 2> kPrincipalPointIdxs{2, 3};
  static constexpr std::array<int, 4> kExtraParamsIdxs{4, 5, 6, 7};
  static constexpr int kExtraParamsIdx = 4;
  static constexpr int kNumExtraParams = 4;

  template <typename T>
  static void Distortion(const T* extra, T u, T v, T* du, T* dv) {
    const T k1 = extra[0], k2 = extra[1], p1 = extra[2], p2 = extra[3];
    const T u2 = u * u, uv = u * v, v2 = v * v;
    const T r2 = u2 + v2;
    const T radial = k1 * r2 + k2 * r2 * r2;
    *du = u * radial + T(2) * p1 * uv + p2 * (r2 + T(2) * u2);
    *dv = v * radial + T(2) * p2 * uv + p1 * (r2 + T(2) * v2);
  }
};

// OpenCV's full rational model: radial (1 + k1 r^2 + k2 r^4 + k3 r^6) /
// (1 + k4 r^2 + k5 r^4 + k6 r^6) plus tangential p1, p2.
struct FullOpenCVCameraModel : PerspectiveCameraModel<FullOpenCVCameraModel> {
  static constexpr CameraModelId kModelId = CameraModelId::kFullOpenCV;
  static constexpr const char* kModelName = "FULL_OPENCV";
  static constexpr int kNumParams = 12;
  static constexpr const char* kParamsInfo = "fx, fy, cx, cy, k1, k2, p1, p2, k3, k4, k5, k6";
  static constexpr std::array<int, 2> kFocalLengthIdxs{0, 1};
  static constexpr std::array<int, 2> kPrincipalPointIdxs{2, 3};
  static constexpr std::array<int, 8> kExtraParamsIdxs{4, 5, 6, 7, 8, 9, 10, 11};
  static constexpr int kExtraParamsIdx = 4;
  static constexpr int kNumExtraParams = 8;

  template <typename T>
  static void Distortion(const T* extra, T u, T v, T* du, T* dv) {
    const T k1 = extra[0], k2 = extra[1], p1 = extra[2], p2 = extra[3];
    const T k3 = extra[4], k4 = extra[5], k5 = extra[6], k6 = extra[7];
    const T u2 = u * u, uv = u * v, v2 = v * v;
    const T r2 = u2 + v2, r4 = r2 * r2, r6 = r4 * r2;
    const T radial = (T(1) + k1 * r2 + k2 * r4 + k3 * r6) / (T(1) + k4 * r2 + k5 * r4 + k6 * r6);
    *du = u * radial + T(2) * p1 * uv + p2 * (r2 + T(2) * u2) - u;
    *dv = v * radial + T(2) * p2 * uv + p1 * (r2 + T(2) * v2) - v;
  }
};

// OpenCV's fisheye model (equidistant): theta_d = theta (1 + k1 theta^2 + k2 theta^4 +
// k3 theta^6 + k4 theta^8).
struct OpenCVFisheyeCameraModel : FisheyeCameraModel<OpenCVFisheyeCameraModel> {
  static constexpr CameraModelId kModelId = CameraModelId::kOpenCVFisheye;
  static constexpr const char* kModelName = "OPENCV_FISHEYE";
  static constexpr int kNumParams = 8;
  static constexpr const char* kParamsInfo = "fx, fy, cx, cy, k1, k2, k3, k4";
  static constexpr std::array<int, 2> kFocalLengthIdxs{0, 1};
  static constexpr std::array<int, 2> kPrincipalPointIdxs{2, 3};
  static constexpr std::array<int, 4> kExtraParamsIdxs{4, 5, 6, 7};
  static constexpr int kExtraParamsIdx = 4;
  static constexpr int kNumExtraParams = 4;

  template <typename T>
  static T ThetaDistortion(const T* extra, T theta) {
    const T t2 = theta * theta, t4 = t2 * t2, t6 = t4 * t2, t8 = t4 * t4;
    return theta * (T(1) + extra[0] * t2 + extra[1] * t4 + extra[2] * t6 + extra[3] * t8);
  }
};

// Equidistant fisheye with one radial coefficient: theta_d = theta (1 + k theta^2).
struct SimpleRadialFisheyeCameraModel : FisheyeCameraModel<SimpleRadialFisheyeCameraModel> {
  static constexpr CameraModelId kModelId = CameraModelId::kSimpleRadialFisheye;
  static constexpr const char* kModelName = "SIMPLE_RADIAL_FISHEYE";
  static constexpr int kNumParams = 4;
  static constexpr const char* kParamsInfo = "f, cx, cy, k";
  static constexpr std::array<int, 1> kFocalLengthIdxs{0};
  static constexpr std::array<int, 2> kPrincipalPointIdxs{1, 2};
  static constexpr std::array<int, 1> kExtraParamsIdxs{3};
  static constexpr int kExtraParamsIdx = 3;
  static constexpr int kNumExtraParams = 1;

  template <typename T>
  static T ThetaDistortion(const T* extra, T theta) {
    return theta * (T(1) + extra[0] * theta * theta);
  }
};

// Equidistant fisheye with two radial coefficients: theta_d = theta (1 + k1 theta^2 +
// k2 theta^4).
struct RadialFisheyeCameraModel : FisheyeCameraModel<RadialFisheyeCameraModel> {
  static constexpr CameraModelId kModelId = CameraModelId::kRadialFisheye;
  static constexpr const char* kModelName = "RADIAL_FISHEYE";
  static constexpr int kNumParams = 5;
  static constexpr const char* kParamsInfo = "f, cx, cy, k1, k2";
  static constexpr std::array<int, 1> kFocalLengthIdxs{0};
  static constexpr std::array<int, 2> kPrincipalPointIdxs{1, 2};
  static constexpr std::array<int, 2> kExtraParamsIdxs{3, 4};
  static constexpr int kExtraParamsIdx = 3;
  static constexpr int kNumExtraParams = 2;

  template <typename T>
  static T ThetaDistortion(const T* extra, T theta) {
    const T t2 = theta * theta;
    return theta * (T(1) + extra[0] * t2 + extra[1] * t2 * t2);
  }
};

// Equirectangular 360 x 180 degree panorama; no parameters, the image size defines it.
struct SphericalCameraModel {
  static constexpr CameraModelId kModelId = CameraModelId::kSpherical;
  static constexpr const char* kModelName = "SPHERICAL";
  static constexpr int kNumParams = 0;
  static constexpr const char* kParamsInfo = "";
  static constexpr std::array<int, 0> kFocalLengthIdxs{};
  static constexpr std::array<int, 0> kPrincipalPointIdxs{};
  static constexpr std::array<int, 0> kExtraParamsIdxs{};
  static constexpr int kExtraParamsIdx = 0;
  static constexpr int kNumExtraParams = 0;

  template <typename T>
  static bool ImgFromCam(const T* /*params*/, T u, T v, T w, double width, double height, T* x,
                         T* y) {
    using std::atan2;
    using std::sqrt;
    const T horizontal = sqrt(u * u + w * w);
    if (!(horizontal + camera_model_internal::abs_value(v) > T(0))) return false;
    const T longitude = atan2(u, w);
    const T latitude = atan2(v, horizontal);
    *x = (longitude / T(2 * camera_model_internal::kPi) + T(0.5)) * T(width);
    *y = (latitude / T(camera_model_internal::kPi) + T(0.5)) * T(height);
    return true;
  }
  static void CamFromImg(const double* /*params*/, double x, double y, double width, double height,
                         double* u, double* v, double* w) {
    const double longitude = (x / width - 0.5) * 2 * camera_model_internal::kPi;
    const double latitude = (y / height - 0.5) * camera_model_internal::kPi;
    *u = std::cos(latitude) * std::sin(longitude);
    *v = std::sin(latitude);
    *w = std::cos(latitude) * std::cos(longitude);
  }
};

// Expands MACRO(Model) for every implemented model; runtime dispatch uses it so a new
// model is added in one place.
#define EDGESFM_CAMERA_MODELS(MACRO)    \
  MACRO(SimplePinholeCameraModel)       \
  MACRO(PinholeCameraModel)             \
  MACRO(SimpleRadialCameraModel)        \
  MACRO(RadialCameraModel)              \
  MACRO(OpenCVCameraModel)              \
  MACRO(OpenCVFisheyeCameraModel)       \
  MACRO(FullOpenCVCameraModel)          \
  MACRO(SimpleRadialFisheyeCameraModel) \
  MACRO(RadialFisheyeCameraModel)       \
  MACRO(SphericalCameraModel)

// Calls `fn(Model{})` with the model type for `model_id`; returns false if unknown.
// Usage: VisitCameraModel(id, [&](auto model) { using M = decltype(model); ... });
template <typename Fn>
bool VisitCameraModel(CameraModelId model_id, Fn&& fn) {
#define EDGESFM_VISIT_CASE(Model) \
  case Model::kModelId:           \
    fn(Model{});                  \
    return true;
  switch (model_id) {
    EDGESFM_CAMERA_MODELS(EDGESFM_VISIT_CASE)
    default:
      return false;
  }
#undef EDGESFM_VISIT_CASE
}

// ---- Runtime queries (defined in camera_models.cc) ----

bool ExistsCameraModelWithId(CameraModelId model_id);
bool ExistsCameraModelWithName(const std::string& model_name);
// kInvalid if unknown.
CameraModelId CameraModelNameToId(const std::string& model_name);
// Empty string if unknown.
std::string CameraModelIdToName(CameraModelId model_id);
// -1 if unknown.
int CameraModelNumParams(CameraModelId model_id);
std::string CameraModelParamsInfo(CameraModelId model_id);
std::vector<int> CameraModelFocalLengthIdxs(CameraModelId model_id);
std::vector<int> CameraModelPrincipalPointIdxs(CameraModelId model_id);
std::vector<int> CameraModelExtraParamsIdxs(CameraModelId model_id);
// True when `num_params` matches the model.
bool CameraModelVerifyParams(CameraModelId model_id, size_t num_params);
// Default parameters from a focal length and image size, COLMAP-style: focal lengths
// = focal_length, principal point at the image centre, distortion zero.
std::vector<double> CameraModelInitializeParams(CameraModelId model_id, double focal_length,
                                                int width, int height);
// Projection through a runtime-chosen model (double only).
bool CameraModelImgFromCam(CameraModelId model_id, const double* params, double u, double v,
                           double w, double width, double height, double* x, double* y);
void CameraModelCamFromImg(CameraModelId model_id, const double* params, double x, double y,
                           double width, double height, double* u, double* v, double* w);
// Converts a pixel error threshold to the equivalent error on the normalised image
// plane (perspective) or in radians (spherical), as COLMAP's CamFromImgThreshold.
double CameraModelCamFromImgThreshold(CameraModelId model_id, const double* params, double width,
                                      double height, double threshold);

}  // namespace edgesfm
