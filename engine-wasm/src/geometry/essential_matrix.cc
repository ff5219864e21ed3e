#include "geometry/essential_matrix.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "estimators/essential_matrix.h"
#include "geometry/triangulation.h"

namespace edgesfm {

void DecomposeEssentialMatrix(const Eigen::Matrix3d& E, Eigen::Matrix3d* R1, Eigen::Matrix3d* R2,
                              Eigen::Vector3d* t) {
  Eigen::JacobiSVD<Eigen::Matrix3d> svd(E, Eigen::ComputeFullU | Eigen::ComputeFullV);
  Eigen::Matrix3d U = svd.matrixU();
  Eigen::Matrix3d V = svd.matrixV();
  // Proper rotations need det U = det V = +1 (E is defined up to sign).
  if (U.determinant() < 0) U *= -1;
  if (V.determinant() < 0) V *= -1;
  Eigen::Matrix3d W;
  W << 0, -1, 0, 1, 0, 0, 0, 0, 1;
  *R1 = U * W * V.transpose();
  *R2 = U * W.transpose() * V.transpose();
  *t = U.col(2).normalized();
}

Eigen::Matrix3d EssentialMatrixFromPose(const Rigid3d& cam2_from_cam1) {
  return CrossProductMatrix(cam2_from_cam1.translation) *
         cam2_from_cam1.rotation.toRotationMatrix();
}

namespace {

// Points of the correspondences that triangulate in front of both cameras.
std::vector<Eigen::Vector3d> PointsInFront(const Rigid3d& cam2_from_cam1,
                                           const std::vector<Eigen::Vector3d>& rays1,
                                           const std::vector<Eigen::Vector3d>& rays2) {
  const Rigid3d cam1_from_cam1;
  std::vector<Eigen::Vector3d> points;
  // Points near infinity (almost parallel rays) say nothing about the sign of t.
  constexpr double kMaxDepthRatio = 1000;
  for (size_t i = 0; i < rays1.size(); ++i) {
    Eigen::Vector3d x;
    if (!TriangulatePoint(cam1_from_cam1, cam2_from_cam1, rays1[i], rays2[i], &x)) continue;
    if (!HasPointPositiveDepth(cam1_from_cam1, rays1[i], x) ||
        !HasPointPositiveDepth(cam2_from_cam1, rays2[i], x)) {
      continue;
    }
    if (x.norm() > kMaxDepthRatio * cam2_from_cam1.translation.norm()) continue;
    points.push_back(x);
  }
  return points;
}

}  // namespace

bool PoseFromEssentialMatrix(const Eigen::Matrix3d& E, const std::vector<Eigen::Vector3d>& rays1,
                             const std::vector<Eigen::Vector3d>& rays2, Rigid3d* cam2_from_cam1,
                             std::vector<Eigen::Vector3d>* points3D) {
  Eigen::Matrix3d R1, R2;
  Eigen::Vector3d t;
  DecomposeEssentialMatrix(E, &R1, &R2, &t);
  const Rigid3d candidates[4] = {Rigid3d(R1, t), Rigid3d(R2, t), Rigid3d(R1, -t), Rigid3d(R2, -t)};
  points3D->clear();
  for (const Rigid3d& candidate : candidates) {
    std::vector<Eigen::Vector3d> points = PointsInFront(candidate, rays1, rays2);
    if (points.size() > points3D->size()) {
      points3D->swap(points);
      *cam2_from_cam1 = candidate;
    }
  }
  return !points3D->empty();
}

bool RefineRelativePose(const std::vector<Eigen::Vector3d>& rays1,
                        const std::vector<Eigen::Vector3d>& rays2, Rigid3d* cam2_from_cam1,
                        int max_num_iterations) {
  if (rays1.size() < 5 || rays1.size() != rays2.size()) return false;
  // Parameters: a rotation update (3) and a translation update on the tangent plane of
  // the unit sphere (2): the scale of t is not observable.
  Eigen::Matrix3d R = cam2_from_cam1->rotation.toRotationMatrix();
  Eigen::Vector3d t = cam2_from_cam1->translation.normalized();
  // Signed Sampson residuals (the sign of the algebraic error keeps them smooth through 0).
  auto sampson = [&](const Eigen::Matrix3d& Rc, const Eigen::Vector3d& tc, Eigen::VectorXd* r) {
    const Eigen::Matrix3d E = CrossProductMatrix(tc) * Rc;
    r->resize(rays1.size());
    for (size_t i = 0; i < rays1.size(); ++i) {
      (*r)(i) = std::sqrt(SphericalSampsonError(rays1[i], rays2[i], E));
      if (rays2[i].dot(E * rays1[i]) < 0) (*r)(i) = -(*r)(i);
    }
  };
  // RANSAC inliers still hold a few outliers near the threshold, which a squared loss lets
  // dominate: use a Cauchy loss rho(r) = s^2 log(1 + r^2 / s^2) with s from the initial
  // residuals' median absolute value (~ the noise), minimised as a least-squares problem
  // on the transformed residuals sign(r) sqrt(rho(r)).
  Eigen::VectorXd initial;
  sampson(R, t, &initial);
  std::vector<double> magnitudes(initial.size());
  for (Eigen::Index i = 0; i < initial.size(); ++i) magnitudes[i] = std::abs(initial(i));
  std::nth_element(magnitudes.begin(), magnitudes.begin() + magnitudes.size() / 2,
                   magnitudes.end());
  const double loss_scale = std::max(1.4826 * magnitudes[magnitudes.size() / 2], 1e-9);
  auto cost = [&](const Eigen::Matrix3d& Rc, const Eigen::Vector3d& tc, Eigen::VectorXd* r) {
    sampson(Rc, tc, r);
    for (Eigen::Index i = 0; i < r->size(); ++i) {
      const double x = (*r)(i) / loss_scale;
      const double robust = loss_scale * std::sqrt(std::log1p(x * x));
      (*r)(i) = (*r)(i) < 0 ? -robust : robust;
    }
    return r->squaredNorm();
  };
  auto update = [&](const Eigen::Matrix<double, 5, 1>& delta, Eigen::Matrix3d* Rn,
                    Eigen::Vector3d* tn) {
    // Tangent basis of the unit sphere at t.
    Eigen::Vector3d b1 = t.unitOrthogonal();
    Eigen::Vector3d b2 = t.cross(b1);
    *Rn =
        Eigen::AngleAxisd(delta.head<3>().norm(),
                          delta.head<3>().norm() > 0 ? Eigen::Vector3d(delta.head<3>().normalized())
                                                     : Eigen::Vector3d::UnitX())
            .toRotationMatrix() *
        R;
    *tn = (t + delta(3) * b1 + delta(4) * b2).normalized();
  };
  Eigen::VectorXd residuals, shifted;
  double current = cost(R, t, &residuals);
  double lambda = 1e-4;
  for (int iteration = 0; iteration < max_num_iterations; ++iteration) {
    // Central-difference Jacobian: 5 columns, cheap next to the solver's other work.
    Eigen::MatrixXd J(rays1.size(), 5);
    for (int k = 0; k < 5; ++k) {
      constexpr double kStep = 1e-7;
      Eigen::Matrix<double, 5, 1> delta = Eigen::Matrix<double, 5, 1>::Zero();
      Eigen::Matrix3d Rp, Rm;
      Eigen::Vector3d tp, tm;
      Eigen::VectorXd rp, rm;
      delta(k) = kStep;
      update(delta, &Rp, &tp);
      delta(k) = -kStep;
      update(delta, &Rm, &tm);
      cost(Rp, tp, &rp);
      cost(Rm, tm, &rm);
      J.col(k) = (rp - rm) / (2 * kStep);
    }
    const Eigen::Matrix<double, 5, 5> JtJ = J.transpose() * J;
    const Eigen::Matrix<double, 5, 1> Jtr = J.transpose() * residuals;
    bool improved = false;
    for (int attempt = 0; attempt < 10 && !improved; ++attempt) {
      Eigen::Matrix<double, 5, 5> A = JtJ;
      A.diagonal() *= (1 + lambda);
      const Eigen::Matrix<double, 5, 1> delta = -A.ldlt().solve(Jtr);
      if (!delta.allFinite()) return false;
      Eigen::Matrix3d Rn;
      Eigen::Vector3d tn;
      update(delta, &Rn, &tn);
      const double candidate = cost(Rn, tn, &shifted);
      if (candidate < current) {
        const double relative_decrease = (current - candidate) / std::max(current, 1e-300);
        R = Rn;
        t = tn;
        current = candidate;
        residuals.swap(shifted);
        lambda = std::max(lambda / 10, 1e-10);
        improved = true;
        if (relative_decrease < 1e-10) iteration = max_num_iterations;
      } else {
        lambda *= 10;
      }
    }
    if (!improved) break;
  }
  cam2_from_cam1->rotation = Eigen::Quaterniond(R).normalized();
  cam2_from_cam1->translation = t;
  return true;
}

Eigen::Matrix3d EssentialFromFundamentalMatrix(const Eigen::Matrix3d& K2, const Eigen::Matrix3d& F,
                                               const Eigen::Matrix3d& K1) {
  return K2.transpose() * F * K1;
}

Eigen::Matrix3d FundamentalFromEssentialMatrix(const Eigen::Matrix3d& K2, const Eigen::Matrix3d& E,
                                               const Eigen::Matrix3d& K1) {
  return K2.transpose().inverse() * E * K1.inverse();
}

}  // namespace edgesfm
