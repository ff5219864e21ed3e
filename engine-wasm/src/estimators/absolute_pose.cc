#include "estimators/absolute_pose.h"

#include <Eigen/Dense>
#include <array>
#include <cmath>

#include "estimators/polynomial.h"

namespace edgesfm {

bool EstimateRigidTransform(const std::vector<Eigen::Vector3d>& a,
                            const std::vector<Eigen::Vector3d>& b, Rigid3d* b_from_a) {
  if (a.size() != b.size() || a.size() < 3) return false;
  Eigen::Vector3d mean_a = Eigen::Vector3d::Zero(), mean_b = Eigen::Vector3d::Zero();
  for (size_t i = 0; i < a.size(); ++i) {
    mean_a += a[i];
    mean_b += b[i];
  }
  mean_a /= static_cast<double>(a.size());
  mean_b /= static_cast<double>(b.size());
  Eigen::Matrix3d cross = Eigen::Matrix3d::Zero();
  for (size_t i = 0; i < a.size(); ++i) cross += (b[i] - mean_b) * (a[i] - mean_a).transpose();
  Eigen::JacobiSVD<Eigen::Matrix3d> svd(cross, Eigen::ComputeFullU | Eigen::ComputeFullV);
  if (svd.singularValues()(1) < 1e-12 * std::max(1.0, svd.singularValues()(0))) return false;
  Eigen::Matrix3d D = Eigen::Matrix3d::Identity();
  if ((svd.matrixU() * svd.matrixV().transpose()).determinant() < 0) D(2, 2) = -1;
  const Eigen::Matrix3d R = svd.matrixU() * D * svd.matrixV().transpose();
  *b_from_a = Rigid3d(R, mean_b - R * mean_a);
  return true;
}

void P3PEstimator::Residuals(const std::vector<X_t>& rays, const std::vector<Y_t>& points3D,
                             const M_t& cam_from_world, std::vector<double>* residuals) {
  residuals->resize(rays.size());
  // RANSAC scores every sample's poses on every correspondence: one rotation matrix per
  // pose (a quaternion costs twice as much per point), and for the unit ray r and the
  // direction u to the point, |u / |u| - r|^2 = 2 - 2 u.r / |u|.
  const Eigen::Matrix3d rotation = cam_from_world.rotation.toRotationMatrix();
  for (size_t i = 0; i < rays.size(); ++i) {
    const Eigen::Vector3d in_cam = rotation * points3D[i] + cam_from_world.translation;
    const double along = in_cam.dot(rays[i]);
    (*residuals)[i] =
        along > 0 ? 2 - 2 * along / in_cam.norm() : std::numeric_limits<double>::max();
  }
}

namespace {

// det(A + g B) = c3 g^3 + c2 g^2 + c1 g + c0, by multilinearity in the columns.
std::vector<double> PencilDeterminant(const Eigen::Matrix3d& A, const Eigen::Matrix3d& B) {
  auto det3 = [](const Eigen::Vector3d& a, const Eigen::Vector3d& b, const Eigen::Vector3d& c) {
    return a.dot(b.cross(c));
  };
  const double c3 = B.determinant();
  const double c2 = det3(A.col(0), B.col(1), B.col(2)) + det3(B.col(0), A.col(1), B.col(2)) +
                    det3(B.col(0), B.col(1), A.col(2));
  const double c1 = det3(B.col(0), A.col(1), A.col(2)) + det3(A.col(0), B.col(1), A.col(2)) +
                    det3(A.col(0), A.col(1), B.col(2));
  const double c0 = A.determinant();
  return {c3, c2, c1, c0};
}

// Gauss-Newton on the three distance equations lambda_i^2 + lambda_j^2 + b_ij lambda_i
// lambda_j = a_ij, as Lambda Twist does to polish its closed-form depths.
void RefineLambdas(double a12, double a13, double a23, double b12, double b13, double b23,
                   Eigen::Vector3d* lambda) {
  for (int iteration = 0; iteration < 5; ++iteration) {
    const double l1 = (*lambda)(0), l2 = (*lambda)(1), l3 = (*lambda)(2);
    const Eigen::Vector3d r(l1 * l1 + l2 * l2 + b12 * l1 * l2 - a12,
                            l1 * l1 + l3 * l3 + b13 * l1 * l3 - a13,
                            l2 * l2 + l3 * l3 + b23 * l2 * l3 - a23);
    if (r.cwiseAbs().maxCoeff() < 1e-13 * std::max({a12, a13, a23})) return;
    Eigen::Matrix3d J;
    J << 2 * l1 + b12 * l2, 2 * l2 + b12 * l1, 0, 2 * l1 + b13 * l3, 0, 2 * l3 + b13 * l1, 0,
        2 * l2 + b23 * l3, 2 * l3 + b23 * l2;
    const Eigen::Vector3d step = J.fullPivLu().solve(r);
    if (!step.allFinite()) return;
    *lambda -= step;
  }
}

}  // namespace

void P3PEstimator::Estimate(const std::vector<X_t>& rays, const std::vector<Y_t>& points3D,
                            std::vector<M_t>* models) {
  models->clear();
  if (rays.size() != 3 || points3D.size() != 3) return;
  const Eigen::Vector3d y1 = rays[0].normalized(), y2 = rays[1].normalized(),
                        y3 = rays[2].normalized();
  const Eigen::Vector3d &x1 = points3D[0], &x2 = points3D[1], &x3 = points3D[2];
  const double b12 = -2 * y1.dot(y2), b13 = -2 * y1.dot(y3), b23 = -2 * y2.dot(y3);
  const double a12 = (x1 - x2).squaredNorm(), a13 = (x1 - x3).squaredNorm(),
               a23 = (x2 - x3).squaredNorm();
  if (a12 < 1e-20 || a13 < 1e-20 || a23 < 1e-20) return;
  // The constraints as quadratic forms Lambda^T M_ij Lambda = a_ij.
  Eigen::Matrix3d M12, M13, M23;
  M12 << 1, b12 / 2, 0, b12 / 2, 1, 0, 0, 0, 0;
  M13 << 1, 0, b13 / 2, 0, 0, 0, b13 / 2, 0, 1;
  M23 << 0, 0, 0, 0, 1, b23 / 2, 0, b23 / 2, 1;
  // Two homogeneous conics through the solutions; a singular member of their pencil is a
  // pair of planes through the origin containing every solution.
  const Eigen::Matrix3d D1 = M12 * a23 - M23 * a12;
  const Eigen::Matrix3d D2 = M13 * a23 - M23 * a13;
  // The pose from the three camera-frame points lambda_i y_i in closed form (Lambda Twist,
  // sec. 3.5): R maps the world triangle's two edges and their normal onto the camera's.
  Eigen::Matrix3d world_edges;
  world_edges.col(0) = x1 - x2;
  world_edges.col(1) = x1 - x3;
  world_edges.col(2) = world_edges.col(0).cross(world_edges.col(1));
  const Eigen::Matrix3d world_edges_inverse = world_edges.inverse();
  const std::vector<double> roots = RealPolynomialRoots(PencilDeterminant(D1, D2));
  for (const double gamma : roots) {
    const Eigen::Matrix3d D0 = D1 + gamma * D2;
    Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> eigen(D0);
    // Order the eigenvalues by magnitude: the smallest is (numerically) zero.
    std::array<int, 3> order = {0, 1, 2};
    std::sort(order.begin(), order.end(), [&](int i, int j) {
      return std::abs(eigen.eigenvalues()(i)) > std::abs(eigen.eigenvalues()(j));
    });
    const double sigma1 = eigen.eigenvalues()(order[0]);
    const double sigma2 = eigen.eigenvalues()(order[1]);
    // Real plane pairs need eigenvalues of opposite signs; otherwise try another root.
    if (sigma1 * sigma2 >= 0) continue;
    const Eigen::Vector3d e1 = eigen.eigenvectors().col(order[0]);
    const Eigen::Vector3d e2 = eigen.eigenvectors().col(order[1]);
    const double s = std::sqrt(-sigma2 / sigma1);
    for (const double sign : {1.0, -1.0}) {
      // Plane n . Lambda = 0, i.e. lambda1 = w0 lambda2 + w1 lambda3.
      const Eigen::Vector3d n = e1 - sign * s * e2;
      if (std::abs(n(0)) < 1e-12 * n.norm()) continue;
      const double w0 = -n(1) / n(0), w1 = -n(2) / n(0);
      // With lambda3 = 1 and lambda2 = tau: a23 (M13 constraint) = a13 (M23 constraint).
      const double qa = a23 * w0 * w0 - a13;
      const double qb = a23 * (2 * w0 * w1 + b13 * w0) - a13 * b23;
      const double qc = a23 * (w1 * w1 + 1 + b13 * w1) - a13;
      for (const double tau : RealPolynomialRoots({qa, qb, qc})) {
        if (tau <= 0) continue;
        const double denominator = tau * tau + b23 * tau + 1;
        if (denominator <= 0) continue;
        const double l3 = std::sqrt(a23 / denominator);
        Eigen::Vector3d lambda((w0 * tau + w1) * l3, tau * l3, l3);
        if (lambda(0) <= 0) continue;
        RefineLambdas(a12, a13, a23, b12, b13, b23, &lambda);
        if ((lambda.array() <= 0).any()) continue;
        Eigen::Matrix3d camera_edges;
        camera_edges.col(0) = lambda(0) * y1 - lambda(1) * y2;
        camera_edges.col(1) = lambda(0) * y1 - lambda(2) * y3;
        camera_edges.col(2) = camera_edges.col(0).cross(camera_edges.col(1));
        const Eigen::Matrix3d rotation = camera_edges * world_edges_inverse;
        if (!rotation.allFinite()) continue;
        const Eigen::Quaterniond q = Eigen::Quaterniond(rotation).normalized();
        models->emplace_back(q, lambda(0) * y1 - q * x1);
      }
    }
    break;  // one degenerate conic yields all solutions
  }
}

namespace {

// Control-point coordinates in the camera from the null-space combination `betas`.
std::array<Eigen::Vector3d, 4> ControlPointsInCamera(
    const Eigen::Matrix<double, 12, 4>& null_vectors, const Eigen::Vector4d& betas) {
  const Eigen::Matrix<double, 12, 1> x = null_vectors * betas;
  return {x.segment<3>(0), x.segment<3>(3), x.segment<3>(6), x.segment<3>(9)};
}

// The products of betas in L's column order.
Eigen::Matrix<double, 10, 1> BetaProducts(const Eigen::Vector4d& b) {
  Eigen::Matrix<double, 10, 1> p;
  p << b(0) * b(0), b(0) * b(1), b(1) * b(1), b(0) * b(2), b(1) * b(2), b(2) * b(2), b(0) * b(3),
      b(1) * b(3), b(2) * b(3), b(3) * b(3);
  return p;
}

void GaussNewtonBetas(const Eigen::Matrix<double, 6, 10>& L, const Eigen::Matrix<double, 6, 1>& rho,
                      Eigen::Vector4d* betas) {
  for (int iteration = 0; iteration < 5; ++iteration) {
    const Eigen::Vector4d& b = *betas;
    Eigen::Matrix<double, 10, 4> d_products = Eigen::Matrix<double, 10, 4>::Zero();
    d_products.col(0) << 2 * b(0), b(1), 0, b(2), 0, 0, b(3), 0, 0, 0;
    d_products.col(1) << 0, b(0), 2 * b(1), 0, b(2), 0, 0, b(3), 0, 0;
    d_products.col(2) << 0, 0, 0, b(0), b(1), 2 * b(2), 0, 0, b(3), 0;
    d_products.col(3) << 0, 0, 0, 0, 0, 0, b(0), b(1), b(2), 2 * b(3);
    const Eigen::Matrix<double, 6, 1> r = rho - L * BetaProducts(b);
    const Eigen::Matrix<double, 6, 4> J = L * d_products;
    const Eigen::Vector4d step = J.colPivHouseholderQr().solve(r);
    if (!step.allFinite()) return;
    *betas += step;
  }
}

}  // namespace

void EPnPEstimator::Estimate(const std::vector<X_t>& rays, const std::vector<Y_t>& points3D,
                             std::vector<M_t>* models) {
  models->clear();
  const size_t n = rays.size();
  if (n < 4 || points3D.size() != n) return;
  for (const Eigen::Vector3d& ray : rays) {
    if (ray.z() <= 0) return;
  }
  // Control points: centroid and the principal axes of the world points.
  Eigen::Vector3d centroid = Eigen::Vector3d::Zero();
  for (const auto& p : points3D) centroid += p;
  centroid /= static_cast<double>(n);
  Eigen::Matrix3d covariance = Eigen::Matrix3d::Zero();
  for (const auto& p : points3D) covariance += (p - centroid) * (p - centroid).transpose();
  Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> pca(covariance);
  std::array<Eigen::Vector3d, 4> control;
  control[0] = centroid;
  for (int k = 0; k < 3; ++k) {
    const double extent = std::sqrt(std::max(pca.eigenvalues()(k), 0.0) / n);
    control[k + 1] = centroid + extent * pca.eigenvectors().col(k);
  }
  Eigen::Matrix3d C;
  for (int k = 0; k < 3; ++k) C.col(k) = control[k + 1] - control[0];
  Eigen::FullPivLU<Eigen::Matrix3d> C_lu(C);
  if (!C_lu.isInvertible()) return;  // planar-degenerate control points
  std::vector<Eigen::Vector4d> alphas(n);
  for (size_t i = 0; i < n; ++i) {
    const Eigen::Vector3d a = C_lu.solve(points3D[i] - control[0]);
    alphas[i] << 1 - a.sum(), a(0), a(1), a(2);
  }
  // M^T M of the projection equations, with u = x / z on the normalised plane.
  Eigen::Matrix<double, 12, 12> MtM = Eigen::Matrix<double, 12, 12>::Zero();
  for (size_t i = 0; i < n; ++i) {
    const double u = rays[i].x() / rays[i].z(), v = rays[i].y() / rays[i].z();
    Eigen::Matrix<double, 2, 12> rows = Eigen::Matrix<double, 2, 12>::Zero();
    for (int j = 0; j < 4; ++j) {
      rows(0, 3 * j) = alphas[i](j);
      rows(0, 3 * j + 2) = -alphas[i](j) * u;
      rows(1, 3 * j + 1) = alphas[i](j);
      rows(1, 3 * j + 2) = -alphas[i](j) * v;
    }
    MtM.noalias() += rows.transpose() * rows;
  }
  Eigen::SelfAdjointEigenSolver<Eigen::Matrix<double, 12, 12>> eigen(MtM);
  const Eigen::Matrix<double, 12, 4> null_vectors = eigen.eigenvectors().leftCols<4>();
  // Distance constraints between control point pairs: L * beta_products = rho.
  constexpr int kPairs[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};
  Eigen::Matrix<double, 6, 10> L;
  Eigen::Matrix<double, 6, 1> rho;
  for (int k = 0; k < 6; ++k) {
    const int a = kPairs[k][0], b = kPairs[k][1];
    std::array<Eigen::Vector3d, 4> dv;
    for (int i = 0; i < 4; ++i)
      dv[i] = null_vectors.col(i).segment<3>(3 * a) - null_vectors.col(i).segment<3>(3 * b);
    L.row(k) << dv[0].dot(dv[0]), 2 * dv[0].dot(dv[1]), dv[1].dot(dv[1]), 2 * dv[0].dot(dv[2]),
        2 * dv[1].dot(dv[2]), dv[2].dot(dv[2]), 2 * dv[0].dot(dv[3]), 2 * dv[1].dot(dv[3]),
        2 * dv[2].dot(dv[3]), dv[3].dot(dv[3]);
    rho(k) = (control[a] - control[b]).squaredNorm();
  }
  // The paper's three linearisations (N = 1, 2, 3 null vectors).
  std::vector<Eigen::Vector4d> candidates;
  {
    Eigen::Matrix<double, 6, 4> L4;
    L4 << L.col(0), L.col(1), L.col(3), L.col(6);
    const Eigen::Vector4d b4 = L4.colPivHouseholderQr().solve(rho);
    const double b0 = std::sqrt(std::abs(b4(0)));
    if (b0 > 0) {
      const double s = b4(0) < 0 ? -1 : 1;
      candidates.emplace_back(b0, s * b4(1) / b0, s * b4(2) / b0, s * b4(3) / b0);
    }
  }
  {
    Eigen::Matrix<double, 6, 3> L3;
    L3 << L.col(0), L.col(1), L.col(2);
    const Eigen::Vector3d b3 = L3.colPivHouseholderQr().solve(rho);
    double b0 = std::sqrt(std::abs(b3(0)));
    const double b1 = (b3(0) < 0) == (b3(2) < 0) ? std::sqrt(std::abs(b3(2))) : 0;
    if (b3(1) * (b3(0) < 0 ? -1 : 1) < 0) b0 = -b0;
    candidates.emplace_back(b0, b1, 0, 0);
  }
  {
    Eigen::Matrix<double, 6, 5> L5;
    L5 << L.col(0), L.col(1), L.col(2), L.col(3), L.col(4);
    const Eigen::Matrix<double, 5, 1> b5 = L5.colPivHouseholderQr().solve(rho);
    double b0 = std::sqrt(std::abs(b5(0)));
    const double b1 = (b5(0) < 0) == (b5(2) < 0) ? std::sqrt(std::abs(b5(2))) : 0;
    if (b5(1) * (b5(0) < 0 ? -1 : 1) < 0) b0 = -b0;
    const double b2 = b0 != 0 ? b5(3) / b0 : 0;
    candidates.emplace_back(b0, b1, b2, 0);
  }
  double best_error = std::numeric_limits<double>::max();
  Rigid3d best;
  std::vector<Eigen::Vector3d> in_camera(n);
  std::vector<double> residuals;
  for (Eigen::Vector4d betas : candidates) {
    GaussNewtonBetas(L, rho, &betas);
    const std::array<Eigen::Vector3d, 4> cc = ControlPointsInCamera(null_vectors, betas);
    for (size_t i = 0; i < n; ++i) {
      in_camera[i] =
          alphas[i](0) * cc[0] + alphas[i](1) * cc[1] + alphas[i](2) * cc[2] + alphas[i](3) * cc[3];
    }
    // The null space is defined up to sign: points must be in front of the camera.
    if (in_camera[0].z() < 0) {
      for (auto& p : in_camera) p = -p;
    }
    Rigid3d cam_from_world;
    if (!EstimateRigidTransform(points3D, in_camera, &cam_from_world)) continue;
    Residuals(rays, points3D, cam_from_world, &residuals);
    double error = 0;
    for (const double r : residuals) error += std::min(r, 1.0);
    if (error < best_error) {
      best_error = error;
      best = cam_from_world;
    }
  }
  if (best_error < std::numeric_limits<double>::max()) models->push_back(best);
}

}  // namespace edgesfm
