#include "scene/camera_models.h"

#include <gtest/gtest.h>

#include <cmath>

namespace edgesfm {
namespace {

constexpr double kWidth = 1600;
constexpr double kHeight = 1200;

// Parameters with realistic distortion for each model, in COLMAP's layout.
std::vector<double> TestParams(CameraModelId id) {
  switch (id) {
    case CameraModelId::kSimplePinhole:
      return {1000, 800, 600};
    case CameraModelId::kPinhole:
      return {1000, 1010, 800, 600};
    case CameraModelId::kSimpleRadial:
      return {1000, 800, 600, -0.08};
    case CameraModelId::kRadial:
      return {1000, 800, 600, -0.1, 0.02};
    case CameraModelId::kOpenCV:
      return {1000, 1010, 800, 600, -0.1, 0.02, 1e-3, -5e-4};
    case CameraModelId::kOpenCVFisheye:
      return {600, 605, 800, 600, 0.05, -0.01, 0.002, -1e-4};
    case CameraModelId::kFullOpenCV:
      return {1000, 1010, 800, 600, -0.1, 0.02, 1e-3, -5e-4, 0.001, 0.01, 0.001, 0.0001};
    case CameraModelId::kSimpleRadialFisheye:
      return {600, 800, 600, 0.03};
    case CameraModelId::kRadialFisheye:
      return {600, 800, 600, 0.03, -0.005};
    case CameraModelId::kSpherical:
      return {};
    default:
      return {};
  }
}

const CameraModelId kAllModels[] = {
    CameraModelId::kSimplePinhole, CameraModelId::kPinhole,
    CameraModelId::kSimpleRadial,  CameraModelId::kRadial,
    CameraModelId::kOpenCV,        CameraModelId::kOpenCVFisheye,
    CameraModelId::kFullOpenCV,    CameraModelId::kSimpleRadialFisheye,
    CameraModelId::kRadialFisheye, CameraModelId::kSpherical};

TEST(CameraModels, NamesIdsAndLayoutsMatchColmap) {
  EXPECT_EQ(CameraModelNameToId("SIMPLE_PINHOLE"), CameraModelId::kSimplePinhole);
  EXPECT_EQ(static_cast<int>(CameraModelNameToId("OPENCV")), 4);
  EXPECT_EQ(static_cast<int>(CameraModelNameToId("FULL_OPENCV")), 6);
  EXPECT_EQ(static_cast<int>(CameraModelNameToId("RADIAL_FISHEYE")), 9);
  EXPECT_EQ(CameraModelNameToId("FOV"), CameraModelId::kInvalid);
  EXPECT_EQ(CameraModelIdToName(CameraModelId::kSpherical), "SPHERICAL");
  EXPECT_EQ(CameraModelNumParams(CameraModelId::kFullOpenCV), 12);
  EXPECT_EQ(CameraModelNumParams(CameraModelId::kSpherical), 0);
  EXPECT_EQ(CameraModelFocalLengthIdxs(CameraModelId::kPinhole), (std::vector<int>{0, 1}));
  EXPECT_EQ(CameraModelPrincipalPointIdxs(CameraModelId::kSimpleRadial), (std::vector<int>{1, 2}));
  EXPECT_EQ(CameraModelExtraParamsIdxs(CameraModelId::kOpenCV), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_TRUE(CameraModelVerifyParams(CameraModelId::kRadial, 5));
  EXPECT_FALSE(CameraModelVerifyParams(CameraModelId::kRadial, 4));
  for (const CameraModelId id : kAllModels) {
    EXPECT_TRUE(ExistsCameraModelWithId(id));
    EXPECT_EQ(CameraModelNameToId(CameraModelIdToName(id)), id);
    EXPECT_EQ(TestParams(id).size(), static_cast<size_t>(CameraModelNumParams(id)));
  }
}

TEST(CameraModels, InitializeParamsPutsPrincipalPointAtCentre) {
  const auto params = CameraModelInitializeParams(CameraModelId::kOpenCV, 1234, 640, 480);
  EXPECT_EQ(params, (std::vector<double>{1234, 1234, 320, 240, 0, 0, 0, 0}));
}

// Projecting a ray and unprojecting the pixel must give back the same ray, for every
// model and across the image (this exercises the iterative undistortion).
TEST(CameraModels, CamFromImgInvertsImgFromCam) {
  for (const CameraModelId id : kAllModels) {
    const std::vector<double> params = TestParams(id);
    for (double x = 50; x < kWidth; x += 150) {
      for (double y = 50; y < kHeight; y += 150) {
        double u, v, w;
        CameraModelCamFromImg(id, params.data(), x, y, kWidth, kHeight, &u, &v, &w);
        double x2, y2;
        ASSERT_TRUE(CameraModelImgFromCam(id, params.data(), 3 * u, 3 * v, 3 * w, kWidth, kHeight,
                                          &x2, &y2))
            << CameraModelIdToName(id);
        EXPECT_NEAR(x2, x, 1e-6) << CameraModelIdToName(id) << " at " << x << "," << y;
        EXPECT_NEAR(y2, y, 1e-6) << CameraModelIdToName(id) << " at " << x << "," << y;
      }
    }
  }
}

TEST(CameraModels, PinholeProjectsLikeTheTextbook) {
  const double params[] = {1000, 800, 600};
  double x, y;
  ASSERT_TRUE(
      SimplePinholeCameraModel::ImgFromCam(params, 0.2, -0.1, 2.0, kWidth, kHeight, &x, &y));
  EXPECT_DOUBLE_EQ(x, 900);
  EXPECT_DOUBLE_EQ(y, 550);
  EXPECT_FALSE(
      SimplePinholeCameraModel::ImgFromCam(params, 0.2, -0.1, -2.0, kWidth, kHeight, &x, &y));
}

TEST(CameraModels, FisheyeImagesRaysBehindTheCameraPlane) {
  // 100 degrees from the optical axis: impossible for a pinhole, fine for a fisheye.
  const double params[] = {300, 800, 600, 0.0};
  const double theta = 100 * camera_model_internal::kPi / 180;
  double x, y;
  ASSERT_TRUE(SimpleRadialFisheyeCameraModel::ImgFromCam(params, std::sin(theta), 0.0,
                                                         std::cos(theta), kWidth, kHeight, &x, &y));
  EXPECT_NEAR(x, 800 + 300 * theta, 1e-9);
  double u, v, w;
  SimpleRadialFisheyeCameraModel::CamFromImg(params, x, y, kWidth, kHeight, &u, &v, &w);
  EXPECT_NEAR(u, std::sin(theta), 1e-9);
  EXPECT_NEAR(w, std::cos(theta), 1e-9);
}

TEST(CameraModels, SphericalCoversTheFullSphere) {
  double x, y;
  // Forward is the image centre, right is a quarter turn, up is the top row.
  ASSERT_TRUE(SphericalCameraModel::ImgFromCam<double>(nullptr, 0, 0, 1, 2000, 1000, &x, &y));
  EXPECT_NEAR(x, 1000, 1e-9);
  EXPECT_NEAR(y, 500, 1e-9);
  ASSERT_TRUE(SphericalCameraModel::ImgFromCam<double>(nullptr, 1, 0, 0, 2000, 1000, &x, &y));
  EXPECT_NEAR(x, 1500, 1e-9);
  ASSERT_TRUE(SphericalCameraModel::ImgFromCam<double>(nullptr, 0, -1, 0, 2000, 1000, &x, &y));
  EXPECT_NEAR(y, 0, 1e-9);
}

TEST(CameraModels, PixelThresholdToNormalisedPlane) {
  const double params[] = {1000, 1010, 800, 600};
  EXPECT_NEAR(CameraModelCamFromImgThreshold(CameraModelId::kPinhole, params, kWidth, kHeight, 4.0),
              4.0 / 1005, 1e-12);
}

// A minimal forward-mode dual number: enough to check the templates compile and
// differentiate with a non-double scalar, as bundle adjustment will.
struct Dual {
  double a, d;
  Dual(double value = 0, double deriv = 0) : a(value), d(deriv) {}
};
Dual operator+(Dual x, Dual y) { return {x.a + y.a, x.d + y.d}; }
Dual operator-(Dual x) { return {-x.a, -x.d}; }
Dual operator*(Dual x, Dual y) { return {x.a * y.a, x.d * y.a + x.a * y.d}; }
Dual operator/(Dual x, Dual y) { return {x.a / y.a, (x.d * y.a - x.a * y.d) / (y.a * y.a)}; }
bool operator<(Dual x, Dual y) { return x.a < y.a; }
bool operator>(Dual x, Dual y) { return x.a > y.a; }
Dual sqrt(Dual x) { return {std::sqrt(x.a), x.d / (2 * std::sqrt(x.a))}; }
Dual atan2(Dual y, Dual x) {
  return {std::atan2(y.a, x.a), (x.a * y.d - y.a * x.d) / (x.a * x.a + y.a * y.a)};
}

TEST(CameraModels, TemplatesDifferentiateWithACustomScalar) {
  const Dual params[] = {1000, 800, 600, -0.08};
  Dual x, y;
  // d x / d u at u = 0.1, v = 0.05, w = 1 for SIMPLE_RADIAL:
  // x = f u (1 + k r^2) + cx, dx/du = f (1 + k r^2 + 2 k u^2).
  ASSERT_TRUE(SimpleRadialCameraModel::ImgFromCam<Dual>(params, Dual(0.1, 1), Dual(0.05), Dual(1),
                                                        kWidth, kHeight, &x, &y));
  const double r2 = 0.1 * 0.1 + 0.05 * 0.05;
  EXPECT_NEAR(x.d, 1000 * (1 - 0.08 * r2 - 2 * 0.08 * 0.01), 1e-9);
  const Dual fisheye_params[] = {600, 800, 600, 0.05, -0.01, 0.002, -1e-4};
  ASSERT_TRUE(RadialFisheyeCameraModel::ImgFromCam<Dual>(fisheye_params, Dual(0.1, 1), Dual(0.05),
                                                         Dual(1), kWidth, kHeight, &x, &y));
  EXPECT_TRUE(std::isfinite(x.d));
}

}  // namespace
}  // namespace edgesfm
