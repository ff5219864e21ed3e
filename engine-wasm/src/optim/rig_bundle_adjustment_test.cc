// Bundle adjustment of rigs (BundleAdjustmentProblem::Observation::sensor): the sensors of a rig
// share one pose (rig_from_world) through their fixed sensor_from_rig, so they move as one body.
#include <gtest/gtest.h>

#include <random>

#include "optim/bundle_adjustment.h"
#include "scene/cubemap.h"

namespace edgesfm {
namespace {

// Rigs stepping along x, points on the walls of a room around them; every point is seen by
// the sensor its ray falls on (cubemap) or by every sensor that images it (stereo).
struct RigScene {
  std::vector<Rigid3d> truth;
  std::vector<Eigen::Quaterniond> rotations;
  std::vector<Eigen::Vector3d> translations;
  std::vector<Eigen::Vector3d> true_points, points;
  std::vector<double> params;
  BundleAdjustmentProblem problem;

  RigScene(int num_rigs, std::vector<Rigid3d> sensors, bool cubemap, double noise_px, double turn,
           unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> uniform(-1, 1);
    std::normal_distribution<double> normal(0, 1);
    params =
        cubemap ? std::vector<double>{128, 128, 128, 128} : std::vector<double>{300, 300, 160, 120};
    const double size = cubemap ? 256 : 320;
    for (int i = 0; i < 400; ++i) {
      // A room 12 x 6 x 6 around the rigs: a random point on one of its walls.
      Eigen::Vector3d p(6 * uniform(rng), 3 * uniform(rng), 3 * uniform(rng));
      const int wall = i % 3;
      p[wall] = (uniform(rng) > 0 ? 1 : -1) * (wall == 0 ? 6 : 3);
      true_points.push_back(p);
      points.push_back(p + 0.05 * Eigen::Vector3d(normal(rng), normal(rng), normal(rng)));
    }
    for (int r = 0; r < num_rigs; ++r) {
      const Eigen::Quaterniond q(Eigen::AngleAxisd(turn * r, Eigen::Vector3d::UnitY()));
      truth.emplace_back(q, -(q * Eigen::Vector3d(0.8 * r - 2, 0.1 * r, 0)));
      const Eigen::Vector3d axis(normal(rng), normal(rng), normal(rng));
      rotations.push_back(r == 0 ? truth[r].rotation
                                 : Eigen::Quaterniond(Eigen::AngleAxisd(0.02, axis.normalized())) *
                                       truth[r].rotation);
      translations.push_back(r == 0 ? truth[r].translation
                                    : truth[r].translation + 0.05 * Eigen::Vector3d(normal(rng),
                                                                                    normal(rng),
                                                                                    normal(rng)));
    }
    problem.sensors_from_rig = std::move(sensors);
    problem.cameras.push_back(
        {CameraModelId::kPinhole, params.data(), size, cubemap ? size : 240, true});
    for (int r = 0; r < num_rigs; ++r) {
      BundleAdjustmentProblem::Pose pose;
      pose.rotation = &rotations[r];
      pose.translation = &translations[r];
      problem.poses.push_back(pose);
    }
    problem.poses[0].SetConstant();
    const int scale_entry = ScaleGaugeTranslationIndex(truth[0].rotation, truth[0].translation,
                                                       truth[1].rotation, truth[1].translation);
    problem.poses[1].constant_translation[scale_entry] = true;
    translations[1][scale_entry] = truth[1].translation[scale_entry];
    for (auto& p : points) problem.points.push_back({&p, false});
    for (size_t j = 0; j < true_points.size(); ++j) {
      for (int r = 0; r < num_rigs; ++r) {
        const Eigen::Vector3d in_rig = truth[r] * true_points[j];
        for (size_t s = 0; s < problem.sensors_from_rig.size(); ++s) {
          if (cubemap && CubemapFaceOfRay(in_rig) != static_cast<int>(s)) continue;
          const Eigen::Vector3d in_cam = problem.sensors_from_rig[s] * in_rig;
          if (in_cam.z() <= 0.1) continue;
          const Eigen::Vector2d xy(
              params[0] * in_cam.x() / in_cam.z() + params[2] + noise_px * normal(rng),
              params[1] * in_cam.y() / in_cam.z() + params[3] + noise_px * normal(rng));
          if (xy.x() < 0 || xy.y() < 0 || xy.x() >= size || xy.y() >= (cubemap ? size : 240))
            continue;
          BundleAdjustmentProblem::Observation obs{0, r, static_cast<int>(j), xy};
          obs.sensor = static_cast<int>(s);
          problem.observations.push_back(obs);
        }
      }
    }
  }

  double MaxCenterError() const {
    double e = 0;
    for (size_t r = 0; r < truth.size(); ++r)
      e = std::max(
          e, (ProjectionCenter(Rigid3d(rotations[r], translations[r])) - ProjectionCenter(truth[r]))
                 .norm());
    return e;
  }
  double MaxRotationErrorDeg() const {
    double e = 0;
    for (size_t r = 0; r < truth.size(); ++r)
      e = std::max(e, RotationAngleBetween(rotations[r], truth[r].rotation) * 180 / M_PI);
    return e;
  }
};

std::vector<Rigid3d> CubemapSensors() {
  std::vector<Rigid3d> sensors;
  for (int f = 0; f < kNumCubemapFaces; ++f) sensors.push_back(CubemapFaceFromRig(f));
  return sensors;
}

TEST(RigBundleAdjustment, CubemapRigsMoveAsOneBody) {
  RigScene scene(5, CubemapSensors(), true, 0.3, 0.3, 7);
  // Every face sees points.
  std::vector<int> per_face(kNumCubemapFaces, 0);
  for (const auto& obs : scene.problem.observations) per_face[obs.sensor]++;
  for (int f = 0; f < kNumCubemapFaces; ++f) EXPECT_GT(per_face[f], 20) << f;
  const double before = scene.MaxCenterError();
  const BundleAdjustmentSummary summary = SolveBundleAdjustment({}, &scene.problem);
  EXPECT_TRUE(summary.converged) << summary.termination;
  EXPECT_LT(scene.MaxCenterError(), 0.01);
  EXPECT_LT(scene.MaxCenterError(), 0.2 * before);
  EXPECT_LT(scene.MaxRotationErrorDeg(), 0.05);
  // The residuals are face pixels: at the noise's level (0.3 px per axis, less what the points
  // absorb).
  const double rms = std::sqrt(2 * summary.final_cost / summary.num_observations);
  EXPECT_GT(rms, 0.25);
  EXPECT_LT(rms, 0.3 * std::sqrt(2.0));
}

TEST(RigBundleAdjustment, SensorOffsetsEnterThroughTheChainRule) {
  // A stereo rig 0.4 apart, the second sensor toed in by 5 degrees, without noise: translation
  // and rotation of sensor_from_rig both enter, and a wrong Jacobian would not reach the truth.
  std::vector<Rigid3d> sensors = {
      Rigid3d(), Rigid3d(Eigen::Quaterniond(Eigen::AngleAxisd(0.087, Eigen::Vector3d::UnitY())),
                         Eigen::Vector3d(-0.4, 0, 0))};
  RigScene scene(6, sensors, false, 0, 0.1, 11);
  for (double e : ReprojectionErrors(scene.problem)) ASSERT_GE(e, 0);
  const BundleAdjustmentSummary summary = SolveBundleAdjustment({}, &scene.problem);
  EXPECT_TRUE(summary.converged) << summary.termination;
  EXPECT_LT(summary.final_cost, 1e-12 * summary.initial_cost);
  EXPECT_LT(scene.MaxCenterError(), 1e-6);
  EXPECT_LT(scene.MaxRotationErrorDeg(), 1e-5);
}

}  // namespace
}  // namespace edgesfm
