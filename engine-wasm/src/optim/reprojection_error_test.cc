#include "optim/reprojection_error.h"

#include <gtest/gtest.h>

#include <vector>

namespace edgesfm {
namespace {

// Every model's autodiff Jacobians agree with central differences of its projection.
TEST(ReprojectionError, JacobiansMatchFiniteDifferencesForEveryModel) {
  const CameraModelId models[] = {
      CameraModelId::kSimplePinhole, CameraModelId::kPinhole,
      CameraModelId::kSimpleRadial,  CameraModelId::kRadial,
      CameraModelId::kOpenCV,        CameraModelId::kOpenCVFisheye,
      CameraModelId::kFullOpenCV,    CameraModelId::kSimpleRadialFisheye,
      CameraModelId::kRadialFisheye, CameraModelId::kSpherical};
  const double width = 640, height = 480;
  const Eigen::Vector3d point(0.3, -0.2, 2.5);
  for (CameraModelId id : models) {
    std::vector<double> params = CameraModelInitializeParams(id, 500, 640, 480);
    const std::vector<int> extra = CameraModelExtraParamsIdxs(id);
    for (size_t k = 0; k < extra.size(); ++k) params[extra[k]] = 0.01 * (k + 1);
    Eigen::Vector2d xy;
    Eigen::Matrix<double, 2, 3> d_point;
    Eigen::Matrix<double, 2, Eigen::Dynamic> d_params;
    ASSERT_TRUE(
        ProjectWithJacobians(id, params.data(), width, height, point, &xy, &d_point, &d_params))
        << CameraModelIdToName(id);
    const double h = 1e-6;
    for (int c = 0; c < 3; ++c) {
      Eigen::Vector3d p = point, m = point;
      p[c] += h;
      m[c] -= h;
      Eigen::Vector2d xp, xm;
      ProjectWithJacobians(id, params.data(), width, height, p, &xp, nullptr, nullptr);
      ProjectWithJacobians(id, params.data(), width, height, m, &xm, nullptr, nullptr);
      EXPECT_LT(((xp - xm) / (2 * h) - d_point.col(c)).norm(), 1e-4) << CameraModelIdToName(id);
    }
    for (size_t c = 0; c < params.size(); ++c) {
      std::vector<double> p = params, m = params;
      p[c] += h;
      m[c] -= h;
      Eigen::Vector2d xp, xm;
      ProjectWithJacobians(id, p.data(), width, height, point, &xp, nullptr, nullptr);
      ProjectWithJacobians(id, m.data(), width, height, point, &xm, nullptr, nullptr);
      EXPECT_LT(((xp - xm) / (2 * h) - d_params.col(c)).norm(), 1e-4 * (1 + d_params.col(c).norm()))
          << CameraModelIdToName(id) << " param " << c;
    }
  }
}

TEST(ReprojectionError, PointBehindPerspectiveCameraIsRejected) {
  const std::vector<double> params =
      CameraModelInitializeParams(CameraModelId::kSimpleRadial, 500, 640, 480);
  Eigen::Vector2d xy;
  EXPECT_FALSE(ProjectWithJacobians(CameraModelId::kSimpleRadial, params.data(), 640, 480,
                                    Eigen::Vector3d(0, 0, -1), &xy, nullptr, nullptr));
}

}  // namespace
}  // namespace edgesfm
