// Test support: a random two-view scene with known truth (poses, 3D points, pinhole
// intrinsics), pixel noise and outlier correspondences. Header-only, used by the
// estimator tests; not part of the engine library.
#pragma once

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <random>
#include <vector>

#include "geometry/rigid3.h"

namespace edgesfm {
namespace testing_support {

struct TwoViewSceneOptions {
  int num_points = 200;
  double outlier_ratio = 0.0;
  double noise_px = 0.0;
  double focal = 1000;
  double width = 1280, height = 960;
  // Rotation angle (radians) and baseline length of cam2 relative to cam1.
  double rotation_angle = 0.2;
  double baseline = 1.0;
  // Points on the plane z = 6 (a planar scene) instead of a volume.
  bool planar = false;
  uint32_t seed = 0;
};

struct TwoViewScene {
  Rigid3d cam2_from_cam1;
  Eigen::Matrix3d K;
  std::vector<Eigen::Vector3d> points3D;  // in cam1 (= world) frame; outliers: none
  std::vector<Eigen::Vector2d> pixels1, pixels2;
  std::vector<Eigen::Vector3d> rays1, rays2;  // K^-1 [x; 1] of the (noisy) pixels
  std::vector<bool> is_inlier;
};

inline TwoViewScene MakeTwoViewScene(const TwoViewSceneOptions& options) {
  std::mt19937 rng(options.seed);
  std::uniform_real_distribution<double> unit(-1, 1);
  std::normal_distribution<double> noise(0, options.noise_px > 0 ? options.noise_px : 1);
  TwoViewScene scene;
  scene.K << options.focal, 0, options.width / 2, 0, options.focal, options.height / 2, 0, 0, 1;
  const Eigen::Vector3d axis = Eigen::Vector3d(unit(rng), unit(rng), unit(rng)).normalized();
  scene.cam2_from_cam1.rotation = Eigen::AngleAxisd(options.rotation_angle, axis);
  // Translation mostly sideways so the views overlap.
  const Eigen::Vector3d direction =
      Eigen::Vector3d(1 + 0.3 * unit(rng), 0.3 * unit(rng), 0.2 * unit(rng)).normalized();
  scene.cam2_from_cam1.translation = -options.baseline * direction;
  auto project = [&](const Eigen::Vector3d& x) {
    return Eigen::Vector2d((scene.K * x).hnormalized());
  };
  auto in_image = [&](const Eigen::Vector2d& p) {
    return p.x() >= 0 && p.y() >= 0 && p.x() < options.width && p.y() < options.height;
  };
  auto ray = [&](const Eigen::Vector2d& p) {
    return Eigen::Vector3d(scene.K.inverse() * p.homogeneous());
  };
  const int num_outliers = static_cast<int>(options.outlier_ratio * options.num_points);
  while (static_cast<int>(scene.pixels1.size()) < options.num_points) {
    const bool outlier = static_cast<int>(scene.pixels1.size()) < num_outliers;
    const double depth = options.planar ? 6.0 : 4 + 4 * (unit(rng) + 1) / 2;
    const Eigen::Vector3d x(unit(rng) * 0.6 * depth, unit(rng) * 0.45 * depth, depth);
    const Eigen::Vector3d x2 = scene.cam2_from_cam1 * x;
    if (x2.z() <= 0.1) continue;
    Eigen::Vector2d p1 = project(x), p2 = project(x2);
    if (!in_image(p1) || !in_image(p2)) continue;
    if (outlier) {
      p2 = Eigen::Vector2d((unit(rng) + 1) / 2 * options.width,
                           (unit(rng) + 1) / 2 * options.height);
    } else if (options.noise_px > 0) {
      p1 += Eigen::Vector2d(noise(rng), noise(rng));
      p2 += Eigen::Vector2d(noise(rng), noise(rng));
    }
    scene.points3D.push_back(x);
    scene.pixels1.push_back(p1);
    scene.pixels2.push_back(p2);
    scene.rays1.push_back(ray(p1));
    scene.rays2.push_back(ray(p2));
    scene.is_inlier.push_back(!outlier);
  }
  return scene;
}

// Essential matrix [t]_x R of the true relative pose, unit Frobenius norm.
inline Eigen::Matrix3d TrueEssentialMatrix(const TwoViewScene& scene) {
  const Eigen::Matrix3d E = CrossProductMatrix(scene.cam2_from_cam1.translation) *
                            scene.cam2_from_cam1.rotation.toRotationMatrix();
  return E / E.norm();
}

// Distance between two matrices defined up to scale (and sign), after normalisation.
inline double ProjectiveDistance(const Eigen::Matrix3d& a, const Eigen::Matrix3d& b) {
  const Eigen::Matrix3d an = a / a.norm();
  const Eigen::Matrix3d bn = b / b.norm();
  return std::min((an - bn).norm(), (an + bn).norm());
}

}  // namespace testing_support
}  // namespace edgesfm
