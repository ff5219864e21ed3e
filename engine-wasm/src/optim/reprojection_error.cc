#include "optim/reprojection_error.h"

#include "optim/jet.h"

namespace edgesfm {
namespace {

template <typename Model>
bool ProjectModelWithJacobians(const double* params, double width, double height,
                               const Eigen::Vector3d& point, Eigen::Vector2d* xy,
                               Eigen::Matrix<double, 2, 3>* d_point,
                               Eigen::Matrix<double, 2, Eigen::Dynamic>* d_params) {
  constexpr int kNumParams = Model::kNumParams;
  if (d_point == nullptr && d_params == nullptr) {
    double x, y;
    if (!Model::ImgFromCam(params, point.x(), point.y(), point.z(), width, height, &x, &y)) {
      return false;
    }
    *xy << x, y;
    return true;
  }
  // Variables: the point (3) then the intrinsics.
  using J = Jet<3 + kNumParams>;
  J jet_params[kNumParams > 0 ? kNumParams : 1];
  for (int i = 0; i < kNumParams; ++i) jet_params[i] = J::Variable(params[i], 3 + i);
  J x, y;
  if (!Model::ImgFromCam(jet_params, J::Variable(point.x(), 0), J::Variable(point.y(), 1),
                         J::Variable(point.z(), 2), width, height, &x, &y)) {
    return false;
  }
  *xy << x.a, y.a;
  if (d_point != nullptr) {
    d_point->row(0) = x.v.template head<3>().transpose();
    d_point->row(1) = y.v.template head<3>().transpose();
  }
  if (d_params != nullptr) {
    d_params->resize(2, kNumParams);
    for (int i = 0; i < kNumParams; ++i) {
      (*d_params)(0, i) = x.v[3 + i];
      (*d_params)(1, i) = y.v[3 + i];
    }
  }
  return true;
}

}  // namespace

bool ProjectWithJacobians(CameraModelId model_id, const double* params, double width, double height,
                          const Eigen::Vector3d& point_in_cam, Eigen::Vector2d* xy,
                          Eigen::Matrix<double, 2, 3>* d_point,
                          Eigen::Matrix<double, 2, Eigen::Dynamic>* d_params) {
  bool ok = false;
  VisitCameraModel(model_id, [&](auto model) {
    using Model = decltype(model);
    ok = ProjectModelWithJacobians<Model>(params, width, height, point_in_cam, xy, d_point,
                                          d_params);
  });
  return ok;
}

}  // namespace edgesfm
