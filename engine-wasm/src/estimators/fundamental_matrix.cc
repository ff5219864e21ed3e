#include "estimators/fundamental_matrix.h"

#include <Eigen/Dense>
#include <array>
#include <cmath>

#include "estimators/polynomial.h"

namespace edgesfm {
namespace {

// Row of the epipolar constraint x2^T F x1 = 0 for F stored row-major.
Eigen::Matrix<double, 1, 9> EpipolarRow(const Eigen::Vector2d& p1, const Eigen::Vector2d& p2) {
  Eigen::Matrix<double, 1, 9> row;
  row << p2.x() * p1.x(), p2.x() * p1.y(), p2.x(), p2.y() * p1.x(), p2.y() * p1.y(), p2.y(), p1.x(),
      p1.y(), 1;
  return row;
}

Eigen::Matrix3d RowMajor(const Eigen::Matrix<double, 9, 1>& f) {
  return Eigen::Map<const Eigen::Matrix<double, 3, 3, Eigen::RowMajor>>(f.data());
}

// Undoes the normalisation and fixes the arbitrary scale (unit Frobenius norm).
Eigen::Matrix3d Denormalize(const Eigen::Matrix3d& F_normalized, const Eigen::Matrix3d& T1,
                            const Eigen::Matrix3d& T2) {
  const Eigen::Matrix3d F = T2.transpose() * F_normalized * T1;
  return F / F.norm();
}

}  // namespace

Eigen::Matrix3d CenterAndNormalizeImagePoints(const Eigen::Vector2d* points, size_t num_points,
                                              Eigen::Vector2d* normalized) {
  Eigen::Vector2d centroid = Eigen::Vector2d::Zero();
  for (size_t i = 0; i < num_points; ++i) centroid += points[i];
  centroid /= static_cast<double>(num_points);
  double mean_distance = 0;
  for (size_t i = 0; i < num_points; ++i) mean_distance += (points[i] - centroid).norm();
  mean_distance /= static_cast<double>(num_points);
  const double scale = mean_distance > 0 ? std::sqrt(2.0) / mean_distance : 1.0;
  Eigen::Matrix3d T;
  T << scale, 0, -scale * centroid.x(), 0, scale, -scale * centroid.y(), 0, 0, 1;
  for (size_t i = 0; i < num_points; ++i) normalized[i] = scale * (points[i] - centroid);
  return T;
}

Eigen::Matrix3d CenterAndNormalizeImagePoints(const std::vector<Eigen::Vector2d>& points,
                                              std::vector<Eigen::Vector2d>* normalized) {
  normalized->resize(points.size());
  return CenterAndNormalizeImagePoints(points.data(), points.size(), normalized->data());
}

void ComputeSquaredSampsonError(const std::vector<Eigen::Vector2d>& points1,
                                const std::vector<Eigen::Vector2d>& points2,
                                const Eigen::Matrix3d& M, std::vector<double>* residuals) {
  residuals->resize(points1.size());
  for (size_t i = 0; i < points1.size(); ++i) {
    const Eigen::Vector3d x1 = points1[i].homogeneous();
    const Eigen::Vector3d x2 = points2[i].homogeneous();
    const Eigen::Vector3d Mx1 = M * x1;
    const Eigen::Vector3d Mtx2 = M.transpose() * x2;
    const double x2tMx1 = x2.dot(Mx1);
    const double denominator = Mx1.head<2>().squaredNorm() + Mtx2.head<2>().squaredNorm();
    (*residuals)[i] =
        denominator > 0 ? x2tMx1 * x2tMx1 / denominator : std::numeric_limits<double>::max();
  }
}

void FundamentalMatrixSevenPointEstimator::Estimate(const std::vector<X_t>& points1,
                                                    const std::vector<Y_t>& points2,
                                                    std::vector<M_t>* models) {
  models->clear();
  if (points1.size() != 7 || points2.size() != 7) return;
  std::array<Eigen::Vector2d, 7> n1, n2;
  const Eigen::Matrix3d T1 = CenterAndNormalizeImagePoints(points1.data(), 7, n1.data());
  const Eigen::Matrix3d T2 = CenterAndNormalizeImagePoints(points2.data(), 7, n2.data());
  Eigen::Matrix<double, 9, 7> At;
  for (size_t i = 0; i < 7; ++i) At.col(i) = EpipolarRow(n1[i], n2[i]).transpose();
  const Eigen::HouseholderQR<Eigen::Matrix<double, 9, 7>> qr(At);
  const Eigen::Matrix<double, 9, 9> Q = qr.householderQ();
  const Eigen::Matrix3d F1 = RowMajor(Q.col(7));
  const Eigen::Matrix3d F2 = RowMajor(Q.col(8));
  // det(lambda F1 + (1 - lambda) F2) is a cubic in lambda; recover its coefficients from
  // four samples (exact for a cubic) rather than expanding the determinant by hand.
  auto det_at = [&](double lambda) { return (lambda * F1 + (1 - lambda) * F2).determinant(); };
  const double d0 = det_at(0), d1 = det_at(1), dm1 = det_at(-1), d2 = det_at(2);
  // p(x) = a x^3 + b x^2 + c x + d with p(0), p(1), p(-1), p(2).
  const double d = d0;
  const double b = (d1 + dm1) / 2 - d;
  const double a = (d2 - 2 * d1 + d - 2 * b) / 6;
  const double c = d1 - a - b - d;
  const double coeffs[4] = {a, b, c, d};
  double roots[3];
  const size_t num_roots = RealPolynomialRoots(coeffs, 4, roots);
  for (size_t i = 0; i < num_roots; ++i) {
    const double lambda = roots[i];
    const Eigen::Matrix3d F = lambda * F1 + (1 - lambda) * F2;
    if (F.norm() < 1e-12) continue;
    models->push_back(Denormalize(F, T1, T2));
  }
}

void FundamentalMatrixSevenPointEstimator::Residuals(const std::vector<X_t>& points1,
                                                     const std::vector<Y_t>& points2, const M_t& F,
                                                     std::vector<double>* residuals) {
  ComputeSquaredSampsonError(points1, points2, F, residuals);
}

void FundamentalMatrixEightPointEstimator::Estimate(const std::vector<X_t>& points1,
                                                    const std::vector<Y_t>& points2,
                                                    std::vector<M_t>* models) {
  models->clear();
  if (points1.size() < 8 || points1.size() != points2.size()) return;
  std::vector<Eigen::Vector2d> n1, n2;
  const Eigen::Matrix3d T1 = CenterAndNormalizeImagePoints(points1, &n1);
  const Eigen::Matrix3d T2 = CenterAndNormalizeImagePoints(points2, &n2);
  // Normal equations (9x9) keep the cost linear in the number of points.
  Eigen::Matrix<double, 9, 9> AtA = Eigen::Matrix<double, 9, 9>::Zero();
  for (size_t i = 0; i < n1.size(); ++i) {
    const Eigen::Matrix<double, 1, 9> row = EpipolarRow(n1[i], n2[i]);
    AtA.noalias() += row.transpose() * row;
  }
  Eigen::SelfAdjointEigenSolver<Eigen::Matrix<double, 9, 9>> eigen(AtA);
  const Eigen::Matrix3d F_full = RowMajor(eigen.eigenvectors().col(0));
  // Closest rank-2 matrix (Frobenius norm).
  Eigen::JacobiSVD<Eigen::Matrix3d> svd(F_full, Eigen::ComputeFullU | Eigen::ComputeFullV);
  Eigen::Vector3d singular = svd.singularValues();
  singular(2) = 0;
  const Eigen::Matrix3d F = svd.matrixU() * singular.asDiagonal() * svd.matrixV().transpose();
  models->push_back(Denormalize(F, T1, T2));
}

}  // namespace edgesfm
