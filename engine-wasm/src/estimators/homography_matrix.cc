#include "estimators/homography_matrix.h"

#include <Eigen/Dense>
#include <array>

#include "estimators/fundamental_matrix.h"

namespace edgesfm {

void HomographyMatrixEstimator::Estimate(const std::vector<X_t>& points1,
                                         const std::vector<Y_t>& points2,
                                         std::vector<M_t>* models) {
  models->clear();
  if (points1.size() < 4 || points1.size() != points2.size()) return;
  // Minimal samples (RANSAC's inner loop) are normalised on the stack.
  const size_t num_points = points1.size();
  std::array<Eigen::Vector2d, kMinNumSamples> minimal1, minimal2;
  std::vector<Eigen::Vector2d> all1, all2;
  Eigen::Vector2d* n1 = minimal1.data();
  Eigen::Vector2d* n2 = minimal2.data();
  if (num_points > kMinNumSamples) {
    all1.resize(num_points);
    all2.resize(num_points);
    n1 = all1.data();
    n2 = all2.data();
  }
  const Eigen::Matrix3d T1 = CenterAndNormalizeImagePoints(points1.data(), num_points, n1);
  const Eigen::Matrix3d T2 = CenterAndNormalizeImagePoints(points2.data(), num_points, n2);
  // Two rows of x2 x (H x1) = 0 per correspondence, H row-major.
  auto rows_of = [&](size_t i) {
    const double x1 = n1[i].x(), y1 = n1[i].y(), x2 = n2[i].x(), y2 = n2[i].y();
    Eigen::Matrix<double, 2, 9> rows;
    rows << -x1, -y1, -1, 0, 0, 0, x2 * x1, x2 * y1, x2,  //
        0, 0, 0, -x1, -y1, -1, y2 * x1, y2 * y1, y2;
    return rows;
  };
  Eigen::Matrix<double, 9, 1> h;
  if (num_points == kMinNumSamples) {
    // A minimal sample (RANSAC's inner loop): the null vector of the 8x9 system by Householder
    // QR of its transpose, far cheaper than an eigensolver on the normal equations.
    Eigen::Matrix<double, 9, 8> At;
    for (size_t i = 0; i < kMinNumSamples; ++i) At.middleCols<2>(2 * i) = rows_of(i).transpose();
    const Eigen::HouseholderQR<Eigen::Matrix<double, 9, 8>> qr(At);
    const Eigen::Matrix<double, 9, 9> Q = qr.householderQ();
    h = Q.col(8);
  } else {
    // Least squares over all inliers (local optimisation): the normal equations' smallest
    // eigenvector.
    Eigen::Matrix<double, 9, 9> AtA = Eigen::Matrix<double, 9, 9>::Zero();
    for (size_t i = 0; i < num_points; ++i) {
      const Eigen::Matrix<double, 2, 9> rows = rows_of(i);
      // Coefficient-wise: Eigen sends a 9x2 by 2x9 product through its blocked GEMM (sizes
      // sum to its threshold of 20), which costs more than the sums themselves.
      AtA.noalias() += rows.transpose().lazyProduct(rows);
    }
    Eigen::SelfAdjointEigenSolver<Eigen::Matrix<double, 9, 9>> eigen(AtA);
    h = eigen.eigenvectors().col(0);
  }
  const Eigen::Matrix3d H_normalized =
      Eigen::Map<const Eigen::Matrix<double, 3, 3, Eigen::RowMajor>>(h.data());
  const Eigen::Matrix3d H = T2.inverse() * H_normalized * T1;
  if (!H.allFinite() || std::abs(H(2, 2)) < 1e-300) {
    if (H.allFinite() && H.norm() > 0) models->push_back(H / H.norm());
    return;
  }
  models->push_back(H / H(2, 2));
}

void HomographyMatrixEstimator::Residuals(const std::vector<X_t>& points1,
                                          const std::vector<Y_t>& points2, const M_t& H,
                                          std::vector<double>* residuals) {
  residuals->resize(points1.size());
  for (size_t i = 0; i < points1.size(); ++i) {
    const Eigen::Vector3d mapped = H * points1[i].homogeneous();
    (*residuals)[i] = mapped.z() == 0 ? std::numeric_limits<double>::max()
                                      : (mapped.hnormalized() - points2[i]).squaredNorm();
  }
}

}  // namespace edgesfm
