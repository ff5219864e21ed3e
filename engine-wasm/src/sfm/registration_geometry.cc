#include "sfm/registration_geometry.h"

#include <Eigen/SVD>
#include <algorithm>
#include <array>
#include <cmath>

#include "estimators/essential_matrix.h"
#include "estimators/loransac.h"
#include "estimators/polynomial.h"
#include "geometry/triangulation.h"
#include "optim/bundle_adjustment.h"

namespace edgesfm {
namespace {

using Poly = std::vector<double>;  // highest degree first

Poly PolyMul(const Poly& a, const Poly& b) {
  Poly r(a.size() + b.size() - 1, 0.0);
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < b.size(); ++j) r[i + j] += a[i] * b[j];
  }
  return r;
}

Poly PolyAdd(Poly a, Poly b) {
  if (a.size() < b.size()) std::swap(a, b);
  const size_t shift = a.size() - b.size();
  for (size_t i = 0; i < b.size(); ++i) a[shift + i] += b[i];
  return a;
}

Poly PolyScale(Poly a, double s) {
  for (double& c : a) c *= s;
  return a;
}

// Rigid b_from_a mapping three points exactly up to noise (Kabsch on the centred sets).
Rigid3d AlignThreePoints(const Eigen::Matrix3d& a, const Eigen::Matrix3d& b) {
  const Eigen::Vector3d ca = a.rowwise().mean();
  const Eigen::Vector3d cb = b.rowwise().mean();
  const Eigen::Matrix3d h = (b.colwise() - cb) * (a.colwise() - ca).transpose();
  Eigen::JacobiSVD<Eigen::Matrix3d> svd(h, Eigen::ComputeFullU | Eigen::ComputeFullV);
  Eigen::Matrix3d d = Eigen::Matrix3d::Identity();
  d(2, 2) = (svd.matrixU() * svd.matrixV().transpose()).determinant() < 0 ? -1 : 1;
  const Eigen::Matrix3d r = svd.matrixU() * d * svd.matrixV().transpose();
  return Rigid3d(r, cb - r * ca);
}

// The perspective-three-point problem (Grunert 1841, in the form reviewed by Haralick
// et al., IJCV 1994): with depths d2 = u d1 and d3 = v d1 along the unit rays, the
// three distance constraints give u linear in v and a quartic in v. The depths give the
// points in the camera frame; the pose aligns them with the world points.
// TODO(swap): engineer A's estimators/ will provide P3P/EPnP; this local solver keeps
// the mapper working until then.
struct P3PEstimator {
  using X_t = Eigen::Vector3d;  // unit viewing ray
  using Y_t = Eigen::Vector3d;  // world point
  using M_t = Rigid3d;          // cam_from_world
  static constexpr size_t kMinNumSamples = 3;

  static void Solve(const std::array<Eigen::Vector3d, 3>& f, const std::array<Eigen::Vector3d, 3>& p,
                    std::vector<M_t>* models) {
    const double c12 = f[0].dot(f[1]), c13 = f[0].dot(f[2]), c23 = f[1].dot(f[2]);
    const double d12 = (p[0] - p[1]).squaredNorm(), d13 = (p[0] - p[2]).squaredNorm(),
                 d23 = (p[1] - p[2]).squaredNorm();
    if (d12 < 1e-24 || d13 < 1e-24 || d23 < 1e-24) return;
    const double k1 = d12 / d13, k2 = d23 / d12;
    // q(v) = v^2 - 2 c13 v + 1; u = N(v) / (2 (c12 - c23 v)).
    const Poly q = {1, -2 * c13, 1};
    const Poly n = PolyAdd(PolyScale(q, k1 * (k2 - 1)), Poly{-1, 0, 1});
    const Poly den = {-2 * c23, 2 * c12};
    // (u^2 - 2 c12 u + 1) = k1 q(v), multiplied by den^2.
    const Poly quartic = PolyAdd(PolyAdd(PolyMul(n, n), PolyScale(PolyMul(n, den), -2 * c12)),
                                 PolyMul(PolyMul(den, den), PolyAdd(Poly{1}, PolyScale(q, -k1))));
    for (const double v : RealPolynomialRoots(quartic)) {
      if (!(v > 0)) continue;
      const double denominator = 2 * (c12 - c23 * v);
      if (std::abs(denominator) < 1e-12) continue;
      const double u = EvaluatePolynomial(n, v) / denominator;
      if (!(u > 0)) continue;
      const double s = 1 + u * u - 2 * u * c12;
      if (!(s > 0)) continue;
      const double d1 = std::sqrt(d12 / s);
      Eigen::Matrix3d in_cam, in_world;
      in_cam << d1 * f[0], u * d1 * f[1], v * d1 * f[2];
      in_world << p[0], p[1], p[2];
      models->push_back(AlignThreePoints(in_world, in_cam));
    }
  }

  static void Estimate(const std::vector<X_t>& rays, const std::vector<Y_t>& points, std::vector<M_t>* models) {
    models->clear();
    if (rays.size() < 3) return;
    // Non-minimal calls (local optimisation) use three spread samples, then refine.
    const size_t n = rays.size();
    Solve({rays[0], rays[n / 3 + (n > 3)], rays[n - 1]}, {points[0], points[n / 3 + (n > 3)], points[n - 1]}, models);
    if (n == 3) return;
    for (M_t& model : *models) RefineOnRays(rays, points, &model);
  }

  // Squared chord between the observed ray and the direction to the point (about the
  // squared angle); points behind the camera get a large residual.
  static void Residuals(const std::vector<X_t>& rays, const std::vector<Y_t>& points, const M_t& model,
                        std::vector<double>* residuals) {
    residuals->resize(rays.size());
    for (size_t i = 0; i < rays.size(); ++i) {
      const Eigen::Vector3d x = model * points[i];
      const double norm = x.norm();
      (*residuals)[i] = norm > 0 && x.dot(rays[i]) > 0 ? (x / norm - rays[i]).squaredNorm() : 4.0;
    }
  }

  // Gauss-Newton on the pose through the unit pinhole (normalised coordinates).
  static void RefineOnRays(const std::vector<X_t>& rays, const std::vector<Y_t>& points, M_t* model) {
    std::vector<Eigen::Vector2d> normalized;
    std::vector<Eigen::Vector3d> used;
    for (size_t i = 0; i < rays.size(); ++i) {
      if (rays[i].z() <= 1e-6) continue;
      normalized.push_back(rays[i].head<2>() / rays[i].z());
      used.push_back(points[i]);
    }
    std::vector<double> unit_pinhole = {1, 0, 0};
    BundleAdjustmentProblem problem;
    problem.cameras.push_back({CameraModelId::kSimplePinhole, unit_pinhole.data(), 2, 2, true});
    BundleAdjustmentProblem::Pose pose;
    pose.rotation = &model->rotation;
    pose.translation = &model->translation;
    problem.poses.push_back(pose);
    for (size_t i = 0; i < used.size(); ++i) {
      problem.points.push_back({&used[i], true});
      problem.observations.push_back({0, 0, static_cast<int>(i), normalized[i]});
    }
    BundleAdjustmentOptions options;
    options.max_num_iterations = 10;
    SolveBundleAdjustment(options, &problem);
  }
};

}  // namespace

std::vector<Rigid3d> DecomposeEssentialMatrix(const Eigen::Matrix3d& E) {
  Eigen::JacobiSVD<Eigen::Matrix3d> svd(E, Eigen::ComputeFullU | Eigen::ComputeFullV);
  Eigen::Matrix3d U = svd.matrixU();
  Eigen::Matrix3d V = svd.matrixV();
  if (U.determinant() < 0) U *= -1;
  if (V.determinant() < 0) V *= -1;
  Eigen::Matrix3d W;
  W << 0, -1, 0, 1, 0, 0, 0, 0, 1;
  const Eigen::Matrix3d R1 = U * W * V.transpose();
  const Eigen::Matrix3d R2 = U * W.transpose() * V.transpose();
  const Eigen::Vector3d t = U.col(2).normalized();
  return {Rigid3d(R1, t), Rigid3d(R1, -t), Rigid3d(R2, t), Rigid3d(R2, -t)};
}

bool EstimateRelativePose(const Camera& camera1, const Camera& camera2, const std::vector<Eigen::Vector2d>& points1,
                          const std::vector<Eigen::Vector2d>& points2, double max_error_px, uint64_t seed,
                          RelativePoseResult* result) {
  std::vector<Eigen::Vector3d> rays1, rays2;
  for (size_t i = 0; i < points1.size(); ++i) {
    rays1.push_back(camera1.CamFromImg(points1[i]).normalized());
    rays2.push_back(camera2.CamFromImg(points2[i]).normalized());
  }
  RansacOptions ransac;
  // The residual is an angle on the unit sphere: average the two cameras' thresholds.
  ransac.max_error = 0.5 * (camera1.CamFromImgThreshold(max_error_px) + camera2.CamFromImgThreshold(max_error_px));
  ransac.random_seed = seed;
  ransac.min_inlier_ratio = 0.25;
  const LoRansac<EssentialMatrixFivePointEstimator> estimator(ransac);
  const auto report = estimator.Estimate(rays1, rays2);
  if (!report.success) return false;

  // The decomposition with most inliers triangulated in front of both cameras.
  const Rigid3d cam1_from_world;
  size_t best_count = 0;
  for (const Rigid3d& candidate : DecomposeEssentialMatrix(report.model)) {
    size_t count = 0;
    for (size_t i = 0; i < rays1.size(); ++i) {
      if (!report.inlier_mask[i]) continue;
      Eigen::Vector3d x;
      if (TriangulatePoint(cam1_from_world, candidate, rays1[i], rays2[i], &x) &&
          HasPointPositiveDepth(cam1_from_world, rays1[i], x) && HasPointPositiveDepth(candidate, rays2[i], x)) {
        ++count;
      }
    }
    if (count > best_count) {
      best_count = count;
      result->cam2_from_cam1 = candidate;
    }
  }
  if (best_count == 0) return false;

  // Two-view bundle adjustment on the inliers in normalised coordinates: the essential
  // matrix fitted by LO-RANSAC is algebraic, this makes the pose optimal in the
  // reprojection sense. The first camera and the scale (one translation entry) are held.
  std::vector<double> unit_pinhole = {1, 0, 0};
  Rigid3d cam1 = cam1_from_world;
  Rigid3d& cam2 = result->cam2_from_cam1;
  std::vector<Eigen::Vector3d> points;
  std::vector<std::pair<Eigen::Vector2d, Eigen::Vector2d>> observations;
  for (size_t i = 0; i < rays1.size(); ++i) {
    Eigen::Vector3d x;
    if (!report.inlier_mask[i] || rays1[i].z() <= 1e-6 || rays2[i].z() <= 1e-6) continue;
    if (!TriangulatePoint(cam1, cam2, rays1[i], rays2[i], &x) || !HasPointPositiveDepth(cam1, rays1[i], x) ||
        !HasPointPositiveDepth(cam2, rays2[i], x)) {
      continue;
    }
    points.push_back(x);
    observations.emplace_back(rays1[i].head<2>() / rays1[i].z(), rays2[i].head<2>() / rays2[i].z());
  }
  if (points.size() >= 5) {
    BundleAdjustmentProblem problem;
    problem.cameras.push_back({CameraModelId::kSimplePinhole, unit_pinhole.data(), 2, 2, true});
    for (Rigid3d* pose : {&cam1, &cam2}) {
      BundleAdjustmentProblem::Pose p;
      p.rotation = &pose->rotation;
      p.translation = &pose->translation;
      problem.poses.push_back(p);
    }
    problem.poses[0].SetConstant();
    problem.poses[1].constant_translation[ScaleGaugeTranslationIndex(cam1.rotation, cam1.translation, cam2.rotation,
                                                                     cam2.translation)] = true;
    for (size_t j = 0; j < points.size(); ++j) {
      problem.points.push_back({&points[j], false});
      problem.observations.push_back({0, 0, static_cast<int>(j), observations[j].first});
      problem.observations.push_back({0, 1, static_cast<int>(j), observations[j].second});
    }
    BundleAdjustmentOptions options;
    options.loss_kernel = LossKernel::kCauchy;
    options.loss_threshold = ransac.max_error;
    options.max_num_iterations = 30;
    SolveBundleAdjustment(options, &problem);
    cam2.translation.normalize();
  }
  result->inlier_mask = report.inlier_mask;
  result->num_inliers = report.support.num_inliers;
  return true;
}

bool EstimateAbsolutePose(const AbsolutePoseOptions& options, const Camera& camera,
                          const std::vector<Eigen::Vector2d>& points2D, const std::vector<Eigen::Vector3d>& points3D,
                          AbsolutePoseResult* result) {
  const double focal = camera.MeanFocalLength();
  std::vector<double> focal_lengths = {focal};
  if (options.estimate_focal_length && options.num_focal_length_samples > 1 && focal > 0) {
    // Log-spaced scan, as COLMAP's estimate_focal_length.
    focal_lengths.clear();
    const double lo = std::log(options.min_focal_length_ratio), hi = std::log(options.max_focal_length_ratio);
    for (int i = 0; i < options.num_focal_length_samples; ++i) {
      focal_lengths.push_back(focal * std::exp(lo + (hi - lo) * i / (options.num_focal_length_samples - 1)));
    }
  }
  bool found = false;
  Camera scaled = camera;
  std::vector<Eigen::Vector3d> rays(points2D.size());
  for (size_t s = 0; s < focal_lengths.size(); ++s) {
    if (focal > 0) scaled.SetFocalLength(focal_lengths[s]);
    for (size_t i = 0; i < points2D.size(); ++i) rays[i] = scaled.CamFromImg(points2D[i]).normalized();
    RansacOptions ransac;
    // Chord on the unit sphere ~ angle: the pixel threshold through the camera.
    ransac.max_error = scaled.CamFromImgThreshold(options.max_error_px);
    ransac.min_inlier_ratio = options.min_inlier_ratio;
    ransac.random_seed = options.seed + s;
    ransac.max_num_trials = 1000;
    const LoRansac<P3PEstimator> estimator(ransac);
    const auto report = estimator.Estimate(rays, points3D);
    if (!report.success || (found && report.support.num_inliers <= result->num_inliers)) continue;
    found = true;
    result->cam_from_world = report.model;
    result->focal_length = focal_lengths[s];
    result->inlier_mask = report.inlier_mask;
    result->num_inliers = report.support.num_inliers;
  }
  return found;
}

bool RefineAbsolutePose(const std::vector<Eigen::Vector2d>& points2D, const std::vector<Eigen::Vector3d>& points3D,
                        bool refine_focal_length, bool refine_extra_params, Rigid3d* cam_from_world, Camera* camera) {
  std::vector<Eigen::Vector3d> points = points3D;
  BundleAdjustmentProblem problem;
  problem.cameras.push_back({camera->model_id, camera->params.data(), static_cast<double>(camera->width),
                             static_cast<double>(camera->height), !(refine_focal_length || refine_extra_params)});
  BundleAdjustmentProblem::Pose pose;
  pose.rotation = &cam_from_world->rotation;
  pose.translation = &cam_from_world->translation;
  problem.poses.push_back(pose);
  for (size_t i = 0; i < points.size(); ++i) {
    problem.points.push_back({&points[i], true});
    problem.observations.push_back({0, 0, static_cast<int>(i), points2D[i]});
  }
  BundleAdjustmentOptions options;
  options.loss_kernel = LossKernel::kCauchy;
  options.loss_threshold = 1.0;
  options.refine_focal_length = refine_focal_length;
  options.refine_extra_params = refine_extra_params;
  options.refine_principal_point = false;
  options.max_num_iterations = 100;
  const BundleAdjustmentSummary summary = SolveBundleAdjustment(options, &problem);
  return std::isfinite(summary.final_cost);
}

}  // namespace edgesfm
