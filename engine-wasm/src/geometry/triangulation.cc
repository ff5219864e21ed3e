#include "geometry/triangulation.h"

#include <Eigen/Dense>
#include <cmath>

namespace edgesfm {

bool TriangulatePoint(const Rigid3d& cam1_from_world, const Rigid3d& cam2_from_world,
                      const Eigen::Vector3d& ray1, const Eigen::Vector3d& ray2,
                      Eigen::Vector3d* xyz) {
  // Each ray r and projection P = [R|t] give [r]_x P X = 0; two independent rows each.
  // Using the cross product with the full ray keeps rays with w <= 0 (fisheye,
  // spherical) valid, unlike the x * P3 - P1 form that assumes w = 1.
  const Eigen::Matrix<double, 3, 4> P1 = cam1_from_world.ToMatrix();
  const Eigen::Matrix<double, 3, 4> P2 = cam2_from_world.ToMatrix();
  Eigen::Matrix<double, 6, 4> A;
  A.topRows<3>() = CrossProductMatrix(ray1.normalized()) * P1;
  A.bottomRows<3>() = CrossProductMatrix(ray2.normalized()) * P2;
  Eigen::JacobiSVD<Eigen::Matrix<double, 6, 4>> svd(A, Eigen::ComputeFullV);
  const Eigen::Vector4d X = svd.matrixV().col(3);
  if (std::abs(X(3)) < 1e-12 * X.head<3>().norm()) return false;
  *xyz = X.head<3>() / X(3);
  return xyz->allFinite();
}

bool TriangulateMultiViewPoint(const std::vector<Rigid3d>& cams_from_world,
                               const std::vector<Eigen::Vector3d>& rays, Eigen::Vector3d* xyz) {
  if (cams_from_world.size() != rays.size() || rays.size() < 2) return false;
  Eigen::Matrix3d A = Eigen::Matrix3d::Zero();
  Eigen::Vector3d b = Eigen::Vector3d::Zero();
  for (size_t i = 0; i < rays.size(); ++i) {
    const Eigen::Vector3d direction =
        (cams_from_world[i].rotation.inverse() * rays[i]).normalized();
    const Eigen::Vector3d center = ProjectionCenter(cams_from_world[i]);
    const Eigen::Matrix3d projector =
        Eigen::Matrix3d::Identity() - direction * direction.transpose();
    A += projector;
    b += projector * center;
  }
  // Parallel rays make A singular along their common direction.
  Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> eigen(A);
  if (eigen.eigenvalues()(0) < 1e-10 * eigen.eigenvalues()(2)) return false;
  *xyz = A.ldlt().solve(b);
  return xyz->allFinite();
}

bool TriangulateMidPoint(const Rigid3d& cam1_from_world, const Rigid3d& cam2_from_world,
                         const Eigen::Vector3d& ray1, const Eigen::Vector3d& ray2,
                         Eigen::Vector3d* xyz) {
  const Eigen::Vector3d c1 = ProjectionCenter(cam1_from_world);
  const Eigen::Vector3d c2 = ProjectionCenter(cam2_from_world);
  const Eigen::Vector3d d1 = (cam1_from_world.rotation.inverse() * ray1).normalized();
  const Eigen::Vector3d d2 = (cam2_from_world.rotation.inverse() * ray2).normalized();
  // Solve c1 + s d1 ~ c2 + t d2 in the least-squares sense.
  const double a = d1.dot(d2);
  const double denominator = 1 - a * a;
  if (denominator < 1e-12) return false;
  const Eigen::Vector3d w = c1 - c2;
  const double s = (a * d2.dot(w) - d1.dot(w)) / denominator;
  const double t = (d2.dot(w) - a * d1.dot(w)) / denominator;
  *xyz = 0.5 * ((c1 + s * d1) + (c2 + t * d2));
  return true;
}

double CalculateTriangulationAngle(const Eigen::Vector3d& center1, const Eigen::Vector3d& center2,
                                   const Eigen::Vector3d& point) {
  const Eigen::Vector3d a = center1 - point;
  const Eigen::Vector3d b = center2 - point;
  // atan2 of |a x b| and a.b is accurate for the small angles that matter here.
  return std::atan2(a.cross(b).norm(), a.dot(b));
}

double CalculateDepth(const Rigid3d& cam_from_world, const Eigen::Vector3d& point) {
  return (cam_from_world * point).z();
}

bool HasPointPositiveDepth(const Rigid3d& cam_from_world, const Eigen::Vector3d& ray,
                           const Eigen::Vector3d& point) {
  return (cam_from_world * point).dot(ray) > 0;
}

}  // namespace edgesfm
