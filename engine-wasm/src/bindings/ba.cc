// Flat C API of bundle adjustment (optim/bundle_adjustment.h) on a scene passed as
// arrays, for the reconstruction-level `bundle_adjust` stage and for tests. Parameters
// are updated in place in the caller's buffers (binding convention, bindings/export.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bindings/export.h"
#include "bindings/guard.h"
#include "bindings/input_checks.h"
#include "optim/bundle_adjustment.h"

namespace {

// Bits of image_flags.
constexpr int kConstantPose = 1;
constexpr int kConstantTranslationX = 2;  // then Y = 4, Z = 8

// options (float64[9]): loss_kernel (0 squared, 1 huber, 2 cauchy, 3 soft_l1, 4 tukey),
// loss_threshold, refine_focal_length, refine_principal_point, refine_extra_params,
// max_num_iterations, two_stage (0/1), max_reprojection_error (two_stage's outlier cut),
// fix_gauge (1: hold the first image's pose and the scale entry of the second's, as the
// mapper's global BA).
struct ParsedOptions {
  edgesfm::BundleAdjustmentOptions ba;
  bool two_stage = false;
  double max_reprojection_error = 4.0;
  bool fix_gauge = false;
};

ParsedOptions ParseOptions(const double* o) {
  ParsedOptions p;
  if (o == nullptr) return p;
  p.ba.loss_kernel = static_cast<edgesfm::LossKernel>(std::clamp(static_cast<int>(o[0]), 0, 4));
  p.ba.loss_threshold = o[1];
  p.ba.refine_focal_length = o[2] != 0;
  p.ba.refine_principal_point = o[3] != 0;
  p.ba.refine_extra_params = o[4] != 0;
  p.ba.max_num_iterations = static_cast<int>(o[5]);
  p.two_stage = o[6] != 0;
  p.max_reprojection_error = o[7];
  p.fix_gauge = o[8] != 0;
  return p;
}

}  // namespace

// Cameras: model ids, sizes (w, h per camera), params (concatenated in model layout;
// updated), camera_constant (0/1, may be null). Images: image_cameras (camera index),
// poses (qw qx qy qz tx ty tz cam_from_world per image; updated), image_flags (may be
// null). Points: xyz (updated). Observations: obs_indices (image, point per observation),
// obs_xy (pixels). summary (float64[6], may be null): iterations, initial cost, final
// cost, converged (0/1), observations kept, mean reprojection error (px) at the end.
// obs_inliers (int32[num_obs], may be null): 1 if the observation was kept (two_stage).
// Returns 0 on success, -1 on invalid input (edgesfm_last_error names the rule).
EDGESFM_EXPORT int edgesfm_ba_solve(int num_cameras, const int32_t* camera_models,
                                    const double* camera_sizes, double* camera_params,
                                    const int32_t* camera_constant, int num_images,
                                    const int32_t* image_cameras, double* poses,
                                    const int32_t* image_flags, int num_points, double* xyz,
                                    int num_observations, const int32_t* obs_indices,
                                    const double* obs_xy, const double* options, double* summary,
                                    int32_t* obs_inliers) {
  return edgesfm::bindings::Guarded(-1, [&] {
    edgesfm::bindings::Require(
        num_cameras >= 0 && num_images >= 0 && num_points >= 0 && num_observations >= 0,
        "bundle adjustment: negative counts");
    edgesfm::bindings::RequireFinite(poses, 7 * static_cast<size_t>(num_images),
                                     "bundle adjustment: poses");
    edgesfm::bindings::RequireFinite(xyz, 3 * static_cast<size_t>(num_points),
                                     "bundle adjustment: points");
    edgesfm::bindings::RequireFinite(obs_xy, 2 * static_cast<size_t>(num_observations),
                                     "bundle adjustment: observations");
    using edgesfm::BundleAdjustmentProblem;
    const ParsedOptions parsed = ParseOptions(options);
    BundleAdjustmentProblem problem;
    size_t param_offset = 0;
    for (int c = 0; c < num_cameras; ++c) {
      const auto model = static_cast<edgesfm::CameraModelId>(camera_models[c]);
      const int n = std::max(edgesfm::CameraModelNumParams(model), 0);
      edgesfm::bindings::RequireCamera(camera_models[c], camera_params + param_offset, n,
                                       camera_sizes[2 * c], camera_sizes[2 * c + 1],
                                       "bundle adjustment: camera " + std::to_string(c));
      BundleAdjustmentProblem::Camera camera;
      camera.model_id = model;
      camera.params = camera_params + param_offset;
      camera.width = camera_sizes[2 * c];
      camera.height = camera_sizes[2 * c + 1];
      camera.constant = camera_constant != nullptr && camera_constant[c] != 0;
      problem.cameras.push_back(camera);
      param_offset += n;
    }
    // Eigen types for the poses; copied back at the end.
    std::vector<Eigen::Quaterniond> rotations(num_images);
    std::vector<Eigen::Vector3d> translations(num_images);
    std::vector<Eigen::Vector3d> points(num_points);
    for (int i = 0; i < num_images; ++i) {
      edgesfm::bindings::Require(
          image_cameras[i] >= 0 && image_cameras[i] < num_cameras,
          "bundle adjustment: image " + std::to_string(i) + "'s camera index is out of range");
      const double* p = poses + 7 * i;
      rotations[i] = Eigen::Quaterniond(p[0], p[1], p[2], p[3]).normalized();
      translations[i] = Eigen::Vector3d(p[4], p[5], p[6]);
      BundleAdjustmentProblem::Pose pose;
      pose.rotation = &rotations[i];
      pose.translation = &translations[i];
      const int flags = image_flags != nullptr ? image_flags[i] : 0;
      if (flags & kConstantPose) pose.SetConstant();
      for (int k = 0; k < 3; ++k) {
        if (flags & (kConstantTranslationX << k)) pose.constant_translation[k] = true;
      }
      problem.poses.push_back(pose);
    }
    if (parsed.fix_gauge && num_images >= 2) {
      problem.poses[0].SetConstant();
      const int k = edgesfm::ScaleGaugeTranslationIndex(rotations[0], translations[0], rotations[1],
                                                        translations[1]);
      problem.poses[1].constant_translation[k] = true;
    }
    for (int j = 0; j < num_points; ++j) {
      points[j] = Eigen::Vector3d(xyz[3 * j], xyz[3 * j + 1], xyz[3 * j + 2]);
      problem.points.push_back({&points[j], false});
    }
    for (int o = 0; o < num_observations; ++o) {
      const int image = obs_indices[2 * o];
      const int point = obs_indices[2 * o + 1];
      edgesfm::bindings::Require(
          image >= 0 && image < num_images && point >= 0 && point < num_points,
          "bundle adjustment: observation " + std::to_string(o) +
              " names an image or point out of range");
      problem.observations.push_back(
          {image_cameras[image], image, point, Eigen::Vector2d(obs_xy[2 * o], obs_xy[2 * o + 1])});
    }

    std::vector<bool> inliers(num_observations, true);
    const edgesfm::BundleAdjustmentSummary result =
        parsed.two_stage ? edgesfm::SolveTwoStageBundleAdjustment(
                               parsed.ba, parsed.max_reprojection_error, &problem, &inliers)
                         : edgesfm::SolveBundleAdjustment(parsed.ba, &problem);

    for (int i = 0; i < num_images; ++i) {
      double* p = poses + 7 * i;
      const Eigen::Quaterniond& q = rotations[i];
      p[0] = q.w();
      p[1] = q.x();
      p[2] = q.y();
      p[3] = q.z();
      p[4] = translations[i].x();
      p[5] = translations[i].y();
      p[6] = translations[i].z();
    }
    for (int j = 0; j < num_points; ++j) {
      for (int k = 0; k < 3; ++k) xyz[3 * j + k] = points[j][k];
    }
    if (obs_inliers != nullptr) {
      for (int o = 0; o < num_observations; ++o) obs_inliers[o] = inliers[o] ? 1 : 0;
    }
    if (summary != nullptr) {
      const std::vector<double> errors = edgesfm::ReprojectionErrors(problem);
      double sum = 0;
      for (double e : errors) sum += e;
      summary[0] = result.num_iterations;
      summary[1] = result.initial_cost;
      summary[2] = result.final_cost;
      summary[3] = result.converged ? 1 : 0;
      summary[4] = static_cast<double>(problem.observations.size());
      summary[5] = errors.empty() ? 0 : sum / errors.size();
    }
    return 0;
  });
}
