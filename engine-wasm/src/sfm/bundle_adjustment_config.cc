#include "sfm/bundle_adjustment_config.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <unordered_set>

#include "geometry/sim3.h"
#include "scene/cubemap.h"

namespace edgesfm {

void BundleAdjustmentConfig::FixGauge(const Reconstruction& reconstruction, image_t first,
                                      image_t second) {
  constant_pose_ids.insert(first);
  const Rigid3d& pose1 = reconstruction.ImageAt(first).cam_from_world;
  const Rigid3d& pose2 = reconstruction.ImageAt(second).cam_from_world;
  constant_translation_entry[second] = ScaleGaugeTranslationIndex(
      pose1.rotation, pose1.translation, pose2.rotation, pose2.translation);
}

bool AlignToPosePriors(const ImagePosePriors& priors, Reconstruction* reconstruction) {
  std::vector<Eigen::Vector3d> centres, targets;
  std::vector<image_t> reg = reconstruction->RegImageIds();
  std::sort(reg.begin(), reg.end());
  for (image_t image_id : reg) {
    const auto it = priors.find(image_id);
    if (it == priors.end()) continue;
    centres.push_back(Inverse(reconstruction->ImageAt(image_id).cam_from_world).translation);
    targets.push_back(it->second.centre);
  }
  Sim3d prior_from_model;
  if (centres.size() < 3 || !EstimateSim3d(centres, targets, &prior_from_model)) return false;
  reconstruction->Transform(prior_from_model);
  return true;
}

namespace {

// How many images each camera has (every camera, 0 included).
std::unordered_map<camera_t, int> ImagesOfCamera(const Reconstruction& reconstruction) {
  std::unordered_map<camera_t, int> images_of_camera;
  for (const auto& [camera_id, camera] : reconstruction.Cameras()) images_of_camera[camera_id] = 0;
  for (const auto& [image_id, image] : reconstruction.Images()) ++images_of_camera[image.camera_id];
  return images_of_camera;
}

}  // namespace

double FocalGroups::LogMedianFocal(camera_t camera_id) const {
  const Member& member = members.at(camera_id);
  std::vector<double> values;
  for (const auto& [id, value] : registered[member.group]) values.push_back(value);
  std::sort(values.begin(), values.end());
  return member.log_scale + 0.5 * (values[(values.size() - 1) / 2] + values[values.size() / 2]);
}

FocalGroups FocalGroupsOf(const ReconstructionBundleAdjustmentOptions& options,
                          const Reconstruction& reconstruction) {
  FocalGroups out;
  if (options.focal_group_sigma <= 0) return out;
  const std::unordered_map<camera_t, int> images_of_camera = ImagesOfCamera(reconstruction);
  std::vector<const Camera*> per_image;
  for (const auto& [camera_id, camera] : reconstruction.Cameras()) {
    if (images_of_camera.at(camera_id) == 1 && !camera.has_prior_focal_length &&
        !camera.FocalLengthIdxs().empty() && camera.MeanFocalLength() > 0)
      per_image.push_back(&camera);
  }
  // In camera id order, for determinism.
  std::sort(per_image.begin(), per_image.end(),
            [](const Camera* a, const Camera* b) { return a->camera_id < b->camera_id; });
  // A size group holds one model and size in either orientation (a device's photos, turned or
  // not) and compares focal lengths in pixels. An aspect group holds one model and aspect ratio
  // (photos resized as found online) and compares focal lengths as ratios of the larger side; the
  // ratios of resized photos differ by their sides' rounding, so sorted ratios within
  // kAspectTolerance of the previous one are one group. A camera is in its size group where that
  // group is large enough, else in its aspect group where that one is.
  constexpr double kAspectTolerance = 0.005;
  const auto larger_side = [](const Camera* c) { return std::max(c->width, c->height); };
  const auto smaller_side = [](const Camera* c) {
    return std::max(1, std::min(c->width, c->height));
  };
  const auto aspect = [&](const Camera* c) {
    return static_cast<double>(larger_side(c)) / smaller_side(c);
  };
  using Group = std::array<int, 3>;  // model, larger side, smaller side (aspect groups: -1, index)
  std::unordered_map<camera_t, Group> size_group, aspect_group;
  std::vector<const Camera*> by_aspect = per_image;
  std::stable_sort(by_aspect.begin(), by_aspect.end(), [&](const Camera* a, const Camera* b) {
    return std::make_pair(a->model_id, aspect(a)) < std::make_pair(b->model_id, aspect(b));
  });
  for (size_t i = 0, index = 0; i < by_aspect.size(); ++i) {
    const Camera* c = by_aspect[i];
    if (i > 0 && (c->model_id != by_aspect[i - 1]->model_id ||
                  aspect(c) > aspect(by_aspect[i - 1]) * (1 + kAspectTolerance)))
      ++index;
    aspect_group[c->camera_id] = {static_cast<int>(c->model_id), -1, static_cast<int>(index)};
    size_group[c->camera_id] = {static_cast<int>(c->model_id), larger_side(c), smaller_side(c)};
  }
  std::map<Group, int> num_registered;
  std::unordered_set<camera_t> registered_cameras;
  for (image_t image_id : reconstruction.RegImageIds()) {
    const camera_t camera_id = reconstruction.ImageAt(image_id).camera_id;
    if (!size_group.count(camera_id)) continue;
    registered_cameras.insert(camera_id);
    ++num_registered[size_group.at(camera_id)];
    ++num_registered[aspect_group.at(camera_id)];
  }
  const auto large_enough = [&](const Group& group) {
    const auto it = num_registered.find(group);
    return it != num_registered.end() && it->second >= options.focal_group_min_size;
  };
  std::map<Group, int> index_of;
  for (const Camera* camera : per_image) {
    const bool by_size = large_enough(size_group.at(camera->camera_id));
    const Group& group =
        by_size ? size_group.at(camera->camera_id) : aspect_group.at(camera->camera_id);
    if (!by_size && !large_enough(group)) continue;
    const auto [it, added] = index_of.emplace(group, static_cast<int>(index_of.size()));
    out.members[camera->camera_id] = {it->second, by_size ? 0 : std::log(larger_side(camera))};
  }
  // Each group's registered cameras, whichever group they are members of themselves.
  out.registered.resize(index_of.size());
  for (const Camera* camera : per_image) {
    if (!registered_cameras.count(camera->camera_id)) continue;
    const double log_focal = std::log(camera->MeanFocalLength());
    if (const auto it = index_of.find(size_group.at(camera->camera_id)); it != index_of.end())
      out.registered[it->second][camera->camera_id] = log_focal;
    if (const auto it = index_of.find(aspect_group.at(camera->camera_id)); it != index_of.end())
      out.registered[it->second][camera->camera_id] = log_focal - std::log(larger_side(camera));
  }
  return out;
}

std::shared_ptr<const std::unordered_map<camera_t, double>> PriorFocalLengths(
    const Reconstruction& input) {
  auto priors = std::make_shared<std::unordered_map<camera_t, double>>();
  for (const auto& [camera_id, camera] : input.Cameras()) {
    if (camera.has_prior_focal_length && !camera.FocalLengthIdxs().empty())
      (*priors)[camera_id] = camera.MeanFocalLength();
  }
  return priors;
}

BundleAdjustmentSummary AdjustReconstruction(const ReconstructionBundleAdjustmentOptions& options,
                                             const BundleAdjustmentConfig& config,
                                             Reconstruction* reconstruction) {
  BundleAdjustmentProblem problem;
  std::unordered_map<camera_t, int> camera_index;
  std::unordered_map<image_t, int> pose_index;
  std::unordered_map<point3D_t, int> point_index;
  // Which observation of the problem is which track element, to delete outliers.
  std::vector<TrackElement> observation_elements;

  const std::unordered_map<camera_t, int> images_of_camera = ImagesOfCamera(*reconstruction);
  auto camera_of = [&](camera_t camera_id) {
    const auto it = camera_index.find(camera_id);
    if (it != camera_index.end()) return it->second;
    Camera& camera = reconstruction->CameraAt(camera_id);
    BundleAdjustmentProblem::Camera c;
    c.model_id = camera.model_id;
    c.params = camera.params.data();
    c.width = camera.width;
    c.height = camera.height;
    c.constant = config.constant_camera_ids.count(camera_id) > 0 ||
                 (options.hold_per_image_cameras && images_of_camera.at(camera_id) == 1);
    problem.cameras.push_back(c);
    return camera_index[camera_id] = static_cast<int>(problem.cameras.size()) - 1;
  };
  auto pose_of = [&](image_t image_id, bool held) {
    const auto it = pose_index.find(image_id);
    if (it != pose_index.end()) return it->second;
    Image& image = reconstruction->ImageAt(image_id);
    BundleAdjustmentProblem::Pose p;
    p.rotation = &image.cam_from_world.rotation;
    p.translation = &image.cam_from_world.translation;
    if (held || config.constant_pose_ids.count(image_id)) p.SetConstant();
    const auto entry = config.constant_translation_entry.find(image_id);
    if (entry != config.constant_translation_entry.end())
      p.constant_translation[entry->second] = true;
    problem.poses.push_back(p);
    return pose_index[image_id] = static_cast<int>(problem.poses.size()) - 1;
  };
  auto point_of = [&](point3D_t point3D_id) {
    const auto it = point_index.find(point3D_id);
    if (it != point_index.end()) return it->second;
    problem.points.push_back({&reconstruction->Point3DAt(point3D_id).xyz,
                              config.constant_point_ids.count(point3D_id) > 0});
    return point_index[point3D_id] = static_cast<int>(problem.points.size()) - 1;
  };
  // The cubemap rig: one held PINHOLE face camera and the six faces' sensor_from_rig.
  const int face_size = options.cubemap_rig_face_size;
  const CubemapFaceIntrinsics face = CubemapIntrinsics(std::max(face_size, 1));
  std::array<double, 4> face_params = {face.focal, face.focal, face.principal, face.principal};
  int face_camera = -1;
  if (face_size > 0) {
    BundleAdjustmentProblem::Camera c;
    c.model_id = CameraModelId::kPinhole;
    c.params = face_params.data();
    c.width = c.height = face_size;
    c.constant = true;
    problem.cameras.push_back(c);
    face_camera = static_cast<int>(problem.cameras.size()) - 1;
    for (int f = 0; f < kNumCubemapFaces; ++f)
      problem.sensors_from_rig.push_back(CubemapFaceFromRig(f));
  }
  auto add_observation = [&](image_t image_id, point2D_t idx, bool held_pose) {
    const Image& image = reconstruction->ImageAt(image_id);
    const Point2D& point2D = image.Point2DAt(idx);
    BundleAdjustmentProblem::Observation obs{camera_of(image.camera_id),
                                             pose_of(image_id, held_pose),
                                             point_of(point2D.point3D_id), point2D.xy};
    const Camera& camera = reconstruction->CameraAt(image.camera_id);
    if (face_camera >= 0 && camera.model_id == CameraModelId::kSpherical) {
      const Eigen::Vector3d ray = camera.CamFromImg(point2D.xy);
      obs.sensor = CubemapFaceOfRay(ray);
      const Eigen::Vector3d d = problem.sensors_from_rig[obs.sensor] * ray;
      obs.camera = face_camera;
      obs.xy = Eigen::Vector2d(face.focal * d.x() / d.z() + face.principal,
                               face.focal * d.y() / d.z() + face.principal);
    }
    problem.observations.push_back(obs);
    observation_elements.emplace_back(image_id, idx);
  };

  // Sorted for a deterministic problem layout (unordered_set order varies).
  std::vector<image_t> image_ids(config.image_ids.begin(), config.image_ids.end());
  std::sort(image_ids.begin(), image_ids.end());
  for (image_t image_id : image_ids) {
    const Image& image = reconstruction->ImageAt(image_id);
    for (point2D_t idx = 0; idx < image.NumPoints2D(); ++idx) {
      if (image.Point2DAt(idx).HasPoint3D()) add_observation(image_id, idx, false);
    }
  }
  std::vector<point3D_t> variable_ids(config.variable_point_ids.begin(),
                                      config.variable_point_ids.end());
  std::sort(variable_ids.begin(), variable_ids.end());
  for (point3D_t point3D_id : variable_ids) {
    if (!reconstruction->ExistsPoint3D(point3D_id)) continue;
    for (const TrackElement& element : reconstruction->Point3DAt(point3D_id).track.Elements()) {
      if (config.image_ids.count(element.image_id)) continue;
      add_observation(element.image_id, element.point2D_idx, true);
    }
  }

  if (config.use_pose_priors && options.pose_priors) {
    for (image_t image_id : image_ids) {
      const auto it = options.pose_priors->find(image_id);
      if (it == options.pose_priors->end()) continue;
      problem.pose_priors.push_back({pose_of(image_id, false), it->second.rotation,
                                     it->second.centre, it->second.sqrt_information});
    }
  }

  if (options.prior_focal_sigma > 0 && options.prior_focal_lengths) {
    std::vector<std::pair<camera_t, int>> cameras(camera_index.begin(), camera_index.end());
    std::sort(cameras.begin(), cameras.end());
    for (const auto& [camera_id, index] : cameras) {
      const auto prior = options.prior_focal_lengths->find(camera_id);
      if (prior == options.prior_focal_lengths->end() || !(prior->second > 0) ||
          !reconstruction->CameraAt(camera_id).has_prior_focal_length ||
          images_of_camera.at(camera_id) != 1)
        continue;
      problem.focal_priors.push_back({index, std::log(prior->second), options.prior_focal_sigma, -1,
                                      0, options.prior_focal_loss_scale});
    }
  }

  if (options.focal_group_sigma > 0) {
    const FocalGroups groups = FocalGroupsOf(options, *reconstruction);
    // In camera order, for a deterministic problem; groups numbered as they first appear.
    std::vector<std::pair<camera_t, int>> cameras(camera_index.begin(), camera_index.end());
    std::sort(cameras.begin(), cameras.end());
    std::map<int, int> problem_group;
    for (const auto& [camera_id, index] : cameras) {
      const auto member = groups.members.find(camera_id);
      if (member == groups.members.end()) continue;
      const int group =
          problem_group.emplace(member->second.group, static_cast<int>(problem_group.size()))
              .first->second;
      problem.focal_priors.push_back({index, groups.LogMedianFocal(camera_id),
                                      options.focal_group_sigma, group, member->second.log_scale,
                                      options.focal_group_loss_scale});
    }
    // The group's other registered cameras (outside this adjustment, or another group's
    // members) count in its median as they are.
    problem.focal_groups.resize(problem_group.size());
    for (const auto& [group, g] : problem_group) {
      for (const auto& [camera_id, value] : groups.registered[group]) {
        const auto member = groups.members.find(camera_id);
        if (!camera_index.count(camera_id) || member == groups.members.end() ||
            member->second.group != group)
          problem.focal_groups[g].fixed_log_ratios.push_back(value);
      }
    }
  }

  if (!options.two_stage) return SolveBundleAdjustment(options.solver, &problem);
  std::vector<bool> inliers;
  const BundleAdjustmentSummary summary = SolveTwoStageBundleAdjustment(
      options.solver, options.max_reprojection_error, &problem, &inliers);
  for (size_t o = 0; o < inliers.size(); ++o) {
    if (inliers[o]) continue;
    const TrackElement& e = observation_elements[o];
    if (reconstruction->ImageAt(e.image_id).Point2DAt(e.point2D_idx).HasPoint3D()) {
      reconstruction->DeleteObservation(e.image_id, e.point2D_idx);
    }
  }
  return summary;
}

}  // namespace edgesfm
