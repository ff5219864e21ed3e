#include "geometry/homography_matrix.h"

#include <Eigen/Dense>
#include <cmath>

#include "geometry/triangulation.h"

namespace edgesfm {
namespace {

// The negated 2x2 minor of the symmetric S obtained by deleting `row` and `col`.
double OppositeOfMinor(const Eigen::Matrix3d& S, int row, int col) {
  const int r1 = row == 0 ? 1 : 0, r2 = row == 2 ? 1 : 2;
  const int c1 = col == 0 ? 1 : 0, c2 = col == 2 ? 1 : 2;
  return S(r1, c2) * S(r2, c1) - S(r1, c1) * S(r2, c2);
}

double SignOf(double value) { return value < 0 ? -1.0 : 1.0; }

}  // namespace

void DecomposeHomographyMatrix(const Eigen::Matrix3d& H, const Eigen::Matrix3d& K1,
                               const Eigen::Matrix3d& K2, std::vector<Eigen::Matrix3d>* Rs,
                               std::vector<Eigen::Vector3d>* ts,
                               std::vector<Eigen::Vector3d>* normals) {
  Rs->clear();
  ts->clear();
  normals->clear();
  // Normalise: H = R + t n^T has middle singular value 1 and positive determinant.
  Eigen::Matrix3d Hn = K2.inverse() * H * K1;
  const Eigen::JacobiSVD<Eigen::Matrix3d> svd(Hn);
  Hn /= svd.singularValues()(1);
  if (Hn.determinant() < 0) Hn *= -1;

  const Eigen::Matrix3d S = Hn.transpose() * Hn - Eigen::Matrix3d::Identity();
  // Pure rotation: S = 0.
  if (S.lpNorm<Eigen::Infinity>() < 1e-3) {
    Rs->push_back(Hn);
    ts->push_back(Eigen::Vector3d::Zero());
    normals->push_back(Eigen::Vector3d::Zero());
    return;
  }
  const double M00 = OppositeOfMinor(S, 0, 0), M11 = OppositeOfMinor(S, 1, 1),
               M22 = OppositeOfMinor(S, 2, 2);
  const double rtM00 = std::sqrt(std::max(M00, 0.0)), rtM11 = std::sqrt(std::max(M11, 0.0)),
               rtM22 = std::sqrt(std::max(M22, 0.0));
  const double M01 = OppositeOfMinor(S, 0, 1), M12 = OppositeOfMinor(S, 1, 2),
               M02 = OppositeOfMinor(S, 0, 2);
  const double e12 = SignOf(M12), e02 = SignOf(M02), e01 = SignOf(M01);
  // Build the two normals from the row of S with the largest diagonal magnitude.
  const Eigen::Vector3d diag = S.diagonal().cwiseAbs();
  int idx = 0;
  diag.maxCoeff(&idx);
  Eigen::Vector3d np1, np2;
  if (idx == 0) {
    np1 << S(0, 0), S(0, 1) + rtM22, S(0, 2) + e12 * rtM11;
    np2 << S(0, 0), S(0, 1) - rtM22, S(0, 2) - e12 * rtM11;
  } else if (idx == 1) {
    np1 << S(0, 1) + rtM22, S(1, 1), S(1, 2) - e02 * rtM00;
    np2 << S(0, 1) - rtM22, S(1, 1), S(1, 2) + e02 * rtM00;
  } else {
    np1 << S(0, 2) + e01 * rtM11, S(1, 2) + rtM00, S(2, 2);
    np2 << S(0, 2) - e01 * rtM11, S(1, 2) - rtM00, S(2, 2);
  }
  const double traceS = S.trace();
  const double nu = 2.0 * std::sqrt(std::max(1.0 + traceS - M00 - M11 - M22, 0.0));
  const double ESii = SignOf(S(idx, idx));
  const double r_2 = 2 + traceS + nu;
  const double nt_2 = 2 + traceS - nu;
  const double r = std::sqrt(std::max(r_2, 0.0));
  const double n_t = std::sqrt(std::max(nt_2, 0.0));
  const Eigen::Vector3d n1 = np1.normalized();
  const Eigen::Vector3d n2 = np2.normalized();
  const double half_nt = 0.5 * n_t;
  const double esii_t_r = ESii * r;
  const Eigen::Vector3d t1_star = half_nt * (esii_t_r * n2 - n_t * n1);
  const Eigen::Vector3d t2_star = half_nt * (esii_t_r * n1 - n_t * n2);
  const Eigen::Matrix3d R1 =
      Hn * (Eigen::Matrix3d::Identity() - (2.0 / nu) * t1_star * n1.transpose());
  const Eigen::Vector3d t1 = R1 * t1_star;
  const Eigen::Matrix3d R2 =
      Hn * (Eigen::Matrix3d::Identity() - (2.0 / nu) * t2_star * n2.transpose());
  const Eigen::Vector3d t2 = R2 * t2_star;
  *Rs = {R1, R1, R2, R2};
  *ts = {t1, -t1, t2, -t2};
  *normals = {-n1, n1, -n2, n2};
}

bool PoseFromHomographyMatrix(const Eigen::Matrix3d& H, const Eigen::Matrix3d& K1,
                              const Eigen::Matrix3d& K2, const std::vector<Eigen::Vector3d>& rays1,
                              const std::vector<Eigen::Vector3d>& rays2, Rigid3d* cam2_from_cam1,
                              Eigen::Vector3d* normal, std::vector<Eigen::Vector3d>* points3D) {
  std::vector<Eigen::Matrix3d> Rs;
  std::vector<Eigen::Vector3d> ts, normals;
  DecomposeHomographyMatrix(H, K1, K2, &Rs, &ts, &normals);
  points3D->clear();
  if (Rs.size() == 1) {  // pure rotation
    *cam2_from_cam1 = Rigid3d(Eigen::Quaterniond(Rs[0]).normalized(), Eigen::Vector3d::Zero());
    *normal = normals[0];
    return true;
  }
  const Rigid3d cam1_from_cam1;
  bool found = false;
  for (size_t k = 0; k < Rs.size(); ++k) {
    const Rigid3d candidate(Eigen::Quaterniond(Rs[k]).normalized(), ts[k]);
    std::vector<Eigen::Vector3d> points;
    for (size_t i = 0; i < rays1.size(); ++i) {
      Eigen::Vector3d x;
      if (TriangulatePoint(cam1_from_cam1, candidate, rays1[i], rays2[i], &x) &&
          HasPointPositiveDepth(cam1_from_cam1, rays1[i], x) &&
          HasPointPositiveDepth(candidate, rays2[i], x)) {
        points.push_back(x);
      }
    }
    if (!found || points.size() > points3D->size()) {
      found = true;
      points3D->swap(points);
      *cam2_from_cam1 = candidate;
      *normal = normals[k];
    }
  }
  return found && !points3D->empty();
}

}  // namespace edgesfm
