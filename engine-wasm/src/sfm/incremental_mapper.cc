#include "sfm/incremental_mapper.h"

#include <algorithm>
#include <cmath>

#include "estimators/essential_matrix.h"
#include "geometry/essential_matrix.h"
#include "geometry/triangulation.h"
#include "sfm/registration_geometry.h"

namespace edgesfm {
namespace {

// Deterministic per-decision seeds (splitmix64 of the base seed and the decision).
uint64_t MixSeed(uint64_t seed, uint64_t a, uint64_t b) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (1 + a) + 0xbf58476d1ce4e5b9ULL * (1 + b);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::vector<image_t> SortedImageIds(const Reconstruction& reconstruction) {
  std::vector<image_t> ids;
  for (const auto& entry : reconstruction.Images()) ids.push_back(entry.first);
  std::sort(ids.begin(), ids.end());
  return ids;
}

// The visibility pyramid score of COLMAP's next-best-view selection: points spread
// over the image score higher than the same number clustered (more cells occupied at
// finer levels).
size_t VisibilityPyramidScore(const std::vector<Eigen::Vector2d>& points, int width, int height) {
  constexpr int kNumLevels = 6;
  size_t score = 0;
  std::vector<char> occupied;
  for (int level = 1; level <= kNumLevels; ++level) {
    const int cells = 1 << level;
    occupied.assign(cells * cells, 0);
    size_t count = 0;
    for (const Eigen::Vector2d& p : points) {
      const int cx = std::clamp(static_cast<int>(p.x() / width * cells), 0, cells - 1);
      const int cy = std::clamp(static_cast<int>(p.y() / height * cells), 0, cells - 1);
      char& cell = occupied[cy * cells + cx];
      if (!cell) {
        cell = 1;
        ++count;
      }
    }
    score += count * cells;
  }
  return score;
}

}  // namespace

std::pair<image_t, size_t> IncrementalMapper::BestMatchedRegisteredImage(image_t image_id) const {
  std::pair<image_t, size_t> best = {kInvalidImageId, 0};
  for (image_t id : reconstruction_->RegImageIds()) {
    const size_t n = graph_->NumCorrespondencesBetweenImages(image_id, id);
    if (n > best.second) best = {id, n};
  }
  return best;
}

double IncrementalMapper::EpipolarSupport(image_t image_id, const Rigid3d& cam_from_world,
                                          const Camera& camera, image_t partner_id,
                                          double max_error_px) const {
  const Image& image = reconstruction_->ImageAt(image_id);
  const Image& partner = reconstruction_->ImageAt(partner_id);
  const Camera& partner_camera = reconstruction_->CameraAt(partner.camera_id);
  std::vector<Eigen::Vector3d> partner_rays, rays;
  for (const auto& [idx, partner_idx] :
       graph_->FindCorrespondencesBetweenImages(image_id, partner_id)) {
    partner_rays.push_back(partner_camera.CamFromImg(partner.Point2DAt(partner_idx).xy));
    rays.push_back(camera.CamFromImg(image.Point2DAt(idx).xy));
  }
  const Eigen::Matrix3d E =
      EssentialMatrixFromPose(cam_from_world * Inverse(partner.cam_from_world));
  std::vector<double> residuals;
  EssentialMatrixFivePointEstimator::Residuals(partner_rays, rays, E, &residuals);
  // Averaged over the two cameras, as two-view verification does.
  const double threshold = 0.5 * (camera.CamFromImgThreshold(max_error_px) +
                                  partner_camera.CamFromImgThreshold(max_error_px));
  const auto support = std::count_if(residuals.begin(), residuals.end(),
                                     [&](double r) { return r <= threshold * threshold; });
  return static_cast<double>(support) / residuals.size();
}

IncrementalMapper::IncrementalMapper(const CorrespondenceGraph* correspondence_graph,
                                     const Reconstruction* database, Reconstruction* reconstruction,
                                     const std::unordered_map<image_t, int>* num_registrations,
                                     InitialPairCache* init_pair_cache)
    : graph_(correspondence_graph),
      database_(database),
      reconstruction_(reconstruction),
      num_registrations_(num_registrations),
      init_pair_cache_(init_pair_cache != nullptr ? init_pair_cache : &own_init_pair_cache_),
      triangulator_(correspondence_graph, reconstruction) {}

void IncrementalMapper::SetState(std::unordered_map<image_t, int> num_reg_trials,
                                 std::unordered_map<image_t, int> init_num_reg_trials,
                                 std::set<std::pair<image_t, image_t>> tried_init_pairs) {
  num_reg_trials_ = std::move(num_reg_trials);
  init_num_reg_trials_ = std::move(init_num_reg_trials);
  tried_init_pairs_ = std::move(tried_init_pairs);
}

bool IncrementalMapper::IsUsedElsewhere(image_t image_id) const {
  if (num_registrations_ == nullptr) return false;
  const auto it = num_registrations_->find(image_id);
  return it != num_registrations_->end() && it->second > 0;
}

size_t IncrementalMapper::NumRegImagesForCamera(camera_t camera_id) const {
  size_t n = 0;
  for (image_t id : reconstruction_->RegImageIds())
    n += reconstruction_->ImageAt(id).camera_id == camera_id;
  return n;
}

bool IncrementalMapper::FindInitialImagePair(const IncrementalMapperOptions& options,
                                             image_t* image_id1, image_t* image_id2) {
  auto usable = [&](image_t id) {
    if (!graph_->ExistsImage(id) || graph_->NumCorrespondencesForImage(id) == 0) return false;
    if (reconstruction_->IsImageRegistered(id) || IsUsedElsewhere(id)) return false;
    const auto it = init_num_reg_trials_.find(id);
    return it == init_num_reg_trials_.end() || it->second < options.init_max_reg_trials;
  };
  std::vector<image_t> first;
  for (image_t id : SortedImageIds(*reconstruction_)) {
    if (usable(id)) first.push_back(id);
  }
  // Prior focal lengths first, then the most correspondences (COLMAP's order).
  std::stable_sort(first.begin(), first.end(), [&](image_t a, image_t b) {
    const bool pa =
        reconstruction_->CameraAt(reconstruction_->ImageAt(a).camera_id).has_prior_focal_length;
    const bool pb =
        reconstruction_->CameraAt(reconstruction_->ImageAt(b).camera_id).has_prior_focal_length;
    if (pa != pb) return pa;
    return graph_->NumCorrespondencesForImage(a) > graph_->NumCorrespondencesForImage(b);
  });
  for (image_t id1 : first) {
    std::vector<std::pair<size_t, image_t>> partners;
    for (image_t id2 : first) {
      if (id2 == id1) continue;
      const size_t n = graph_->NumCorrespondencesBetweenImages(id1, id2);
      if (n > 0) partners.emplace_back(n, id2);
    }
    std::stable_sort(partners.begin(), partners.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [n, id2] : partners) {
      if (tried_init_pairs_.count({std::min(id1, id2), std::max(id1, id2)})) continue;
      *image_id1 = id1;
      *image_id2 = id2;
      return true;
    }
  }
  return false;
}

const InitialPairGeometry& IncrementalMapper::InitialGeometry(
    const IncrementalMapperOptions& options, image_t image_id1, image_t image_id2) {
  const auto key = std::make_pair(image_id1, image_id2);
  const auto cached = init_pair_cache_->find(key);
  if (cached != init_pair_cache_->end()) return cached->second;
  InitialPairGeometry& g = (*init_pair_cache_)[key];
  const Image& image1 = reconstruction_->ImageAt(image_id1);
  const Image& image2 = reconstruction_->ImageAt(image_id2);
  const Camera& camera1 = reconstruction_->CameraAt(image1.camera_id);
  const Camera& camera2 = reconstruction_->CameraAt(image2.camera_id);
  const CorrespondenceGraph::Matches matches =
      graph_->FindCorrespondencesBetweenImages(image_id1, image_id2);
  std::vector<Eigen::Vector2d> points1, points2;
  for (const auto& [idx1, idx2] : matches) {
    points1.push_back(image1.Point2DAt(idx1).xy);
    points2.push_back(image2.Point2DAt(idx2).xy);
  }
  RelativePoseResult relative;
  if (matches.empty() ||
      !EstimateRelativePose(camera1, camera2, points1, points2, options.init_max_error,
                            MixSeed(options.seed, image_id1, image_id2), &relative)) {
    return g;
  }
  g.valid = true;
  g.cam2_from_cam1 = relative.cam2_from_cam1;
  g.num_inliers = relative.num_inliers;
  g.forward_motion = std::abs(relative.cam2_from_cam1.translation.normalized().z());
  const Rigid3d cam1_from_world;
  const Rigid3d& cam2_from_world = relative.cam2_from_cam1;
  const Eigen::Vector3d center1 = ProjectionCenter(cam1_from_world);
  const Eigen::Vector3d center2 = ProjectionCenter(cam2_from_world);
  for (size_t i = 0; i < matches.size(); ++i) {
    if (!relative.inlier_mask[i]) continue;
    const Eigen::Vector3d ray1 = camera1.CamFromImg(points1[i]);
    const Eigen::Vector3d ray2 = camera2.CamFromImg(points2[i]);
    Eigen::Vector3d xyz;
    if (!TriangulatePoint(cam1_from_world, cam2_from_world, ray1, ray2, &xyz)) continue;
    if (!HasPointPositiveDepth(cam1_from_world, ray1, xyz) ||
        !HasPointPositiveDepth(cam2_from_world, ray2, xyz)) {
      continue;
    }
    g.points.emplace_back(i, xyz);
    g.angles.push_back(CalculateTriangulationAngle(center1, center2, xyz));
  }
  if (!g.angles.empty()) {
    std::vector<double> sorted = g.angles;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    g.median_tri_angle = sorted[sorted.size() / 2];
  }
  return g;
}

bool IncrementalMapper::RegisterInitialImagePair(const IncrementalMapperOptions& options,
                                                 image_t image_id1, image_t image_id2) {
  tried_init_pairs_.insert({std::min(image_id1, image_id2), std::max(image_id1, image_id2)});
  init_num_reg_trials_[image_id1] += 1;
  init_num_reg_trials_[image_id2] += 1;
  if (graph_->NumCorrespondencesBetweenImages(image_id1, image_id2) <
      static_cast<size_t>(options.init_min_num_inliers)) {
    return false;
  }
  const InitialPairGeometry& g = InitialGeometry(options, image_id1, image_id2);
  const double min_angle = options.init_min_tri_angle * M_PI / 180;
  // COLMAP's rules: enough inliers, a baseline not along the viewing direction
  // (forward motion triangulates poorly), a median triangulation angle above the minimum.
  if (!g.valid || g.num_inliers < static_cast<size_t>(options.init_min_num_inliers) ||
      g.forward_motion > options.init_max_forward_motion ||
      g.forward_motion < options.init_min_forward_motion || g.angles.empty() ||
      g.median_tri_angle < min_angle) {
    return false;
  }
  Image& image1 = reconstruction_->ImageAt(image_id1);
  Image& image2 = reconstruction_->ImageAt(image_id2);
  image1.cam_from_world = Rigid3d();
  image2.cam_from_world = g.cam2_from_cam1;
  reconstruction_->RegisterImage(image_id1);
  reconstruction_->RegisterImage(image_id2);
  const CorrespondenceGraph::Matches matches =
      graph_->FindCorrespondencesBetweenImages(image_id1, image_id2);
  for (size_t k = 0; k < g.points.size(); ++k) {
    if (g.angles[k] < min_angle) continue;
    const auto& [i, xyz] = g.points[k];
    if (image1.Point2DAt(matches[i].first).HasPoint3D() ||
        image2.Point2DAt(matches[i].second).HasPoint3D())
      continue;
    Track track;
    track.AddElement(image_id1, matches[i].first);
    track.AddElement(image_id2, matches[i].second);
    reconstruction_->AddPoint3D(xyz, track);
  }
  return true;
}

std::vector<image_t> IncrementalMapper::FindNextImages(const IncrementalMapperOptions& options) {
  std::vector<std::pair<size_t, image_t>> ranked;
  std::vector<Eigen::Vector2d> visible;
  for (image_t id : SortedImageIds(*reconstruction_)) {
    if (reconstruction_->IsImageRegistered(id) || !graph_->ExistsImage(id)) continue;
    const auto trials = num_reg_trials_.find(id);
    if (trials != num_reg_trials_.end() && trials->second >= options.max_reg_trials) continue;
    const Image& image = reconstruction_->ImageAt(id);
    visible.clear();
    for (point2D_t idx = 0; idx < image.NumPoints2D(); ++idx) {
      for (const auto& corr : graph_->FindCorrespondences(id, idx)) {
        if (reconstruction_->IsImageRegistered(corr.image_id) &&
            reconstruction_->ImageAt(corr.image_id).Point2DAt(corr.point2D_idx).HasPoint3D()) {
          visible.push_back(image.Point2DAt(idx).xy);
          break;
        }
      }
    }
    if (visible.empty()) continue;
    const Camera& camera = reconstruction_->CameraAt(image.camera_id);
    ranked.emplace_back(VisibilityPyramidScore(visible, camera.width, camera.height), id);
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<image_t> ids;
  for (const auto& entry : ranked) ids.push_back(entry.second);
  return ids;
}

bool IncrementalMapper::RegisterNextImage(const IncrementalMapperOptions& options,
                                          image_t image_id) {
  Image& image = reconstruction_->ImageAt(image_id);
  const auto is_bogus = [&](const Camera& c) {
    return c.HasBogusParams(options.min_focal_length_ratio, options.max_focal_length_ratio,
                            options.max_extra_param);
  };
  // 2D-3D correspondences through the matches of each keypoint, each pair once, none through
  // an image whose camera went bogus.
  std::vector<Eigen::Vector2d> points2D;
  std::vector<Eigen::Vector3d> points3D;
  std::unordered_set<uint64_t> seen;
  for (point2D_t idx = 0; idx < image.NumPoints2D(); ++idx) {
    for (const auto& corr : graph_->FindCorrespondences(image_id, idx)) {
      if (!reconstruction_->IsImageRegistered(corr.image_id)) continue;
      const Image& partner_image = reconstruction_->ImageAt(corr.image_id);
      const Point2D& partner = partner_image.Point2DAt(corr.point2D_idx);
      if (!partner.HasPoint3D()) continue;
      if (is_bogus(reconstruction_->CameraAt(partner_image.camera_id))) continue;
      if (!seen.insert((static_cast<uint64_t>(idx) << 40) ^ partner.point3D_id).second) continue;
      points2D.push_back(image.Point2DAt(idx).xy);
      points3D.push_back(reconstruction_->Point3DAt(partner.point3D_id).xyz);
    }
  }
  // As COLMAP: a camera another registered image has refined is held, unless its refinement
  // went bogus; a new or bogus camera starts again from its initial parameters and is
  // estimated (focal only without a prior) and refined with this image.
  Camera camera = reconstruction_->CameraAt(image.camera_id);
  const bool estimate_camera = NumRegImagesForCamera(image.camera_id) == 0 || is_bogus(camera);
  // Half the inliers suffice where the epipolar check can be made (options). It checks the
  // camera too (the essential matrix is taken through both cameras' intrinsics), so a camera
  // estimated with this image qualifies: in a wide-baseline collection of per-image cameras
  // the next image often sees fewer than abs_pose_min_num_inliers of the model's points.
  const auto [partner_id, partner_matches] = BestMatchedRegisteredImage(image_id);
  const bool epipolar_check =
      partner_matches >= static_cast<size_t>(options.abs_pose_epipolar_min_num_matches);
  const size_t min_num_inliers = epipolar_check ? (options.abs_pose_min_num_inliers + 1) / 2
                                                : options.abs_pose_min_num_inliers;
  if (points2D.size() < min_num_inliers) return false;
  // Only a real attempt counts as a trial: an image that still sees too few points (the
  // far end of a sequence) must not use up its trials before its neighbours register.
  const int trial = num_reg_trials_[image_id]++;
  if (estimate_camera) camera.params = database_->CameraAt(image.camera_id).params;
  AbsolutePoseOptions pose_options;
  pose_options.max_error_px = options.abs_pose_max_error;
  pose_options.min_inlier_ratio = options.abs_pose_min_inlier_ratio;
  pose_options.estimate_focal_length = estimate_camera && !camera.has_prior_focal_length;
  pose_options.seed = MixSeed(options.seed, image_id, 1000 + trial);
  AbsolutePoseResult pose;
  if (!EstimateAbsolutePose(pose_options, camera, points2D, points3D, &pose)) return false;
  if (pose.num_inliers < min_num_inliers) return false;
  const bool few_inliers = pose.num_inliers < static_cast<size_t>(options.abs_pose_min_num_inliers);
  if (pose_options.estimate_focal_length) camera.SetFocalLength(pose.focal_length);
  std::vector<Eigen::Vector2d> inlier2D;
  std::vector<Eigen::Vector3d> inlier3D;
  for (size_t i = 0; i < points2D.size(); ++i) {
    if (!pose.inlier_mask[i]) continue;
    inlier2D.push_back(points2D[i]);
    inlier3D.push_back(points3D[i]);
  }
  Rigid3d cam_from_world = pose.cam_from_world;
  if (!RefineAbsolutePose(
          inlier2D, inlier3D, estimate_camera && options.abs_pose_refine_focal_length,
          estimate_camera && options.abs_pose_refine_extra_params, &cam_from_world, &camera)) {
    return false;
  }
  if (few_inliers && EpipolarSupport(image_id, cam_from_world, camera, partner_id,
                                     options.abs_pose_epipolar_max_error) <
                         options.abs_pose_min_epipolar_support) {
    return false;
  }
  reconstruction_->CameraAt(image.camera_id).params = camera.params;
  image.cam_from_world = cam_from_world;
  reconstruction_->RegisterImage(image_id);
  return true;
}

size_t IncrementalMapper::TriangulateImage(const IncrementalTriangulatorOptions& options,
                                           image_t image_id) {
  return triangulator_.TriangulateImage(options, image_id);
}

size_t IncrementalMapper::Retriangulate(const IncrementalTriangulatorOptions& options) {
  return triangulator_.Retriangulate(options);
}

size_t IncrementalMapper::CompleteAndMergeTracks(const IncrementalTriangulatorOptions& options) {
  return triangulator_.CompleteAllTracks(options) + triangulator_.MergeAllTracks(options);
}

std::vector<image_t> IncrementalMapper::FindLocalBundle(const IncrementalMapperOptions& options,
                                                        image_t image_id) const {
  std::unordered_map<image_t, size_t> shared;
  for (const Point2D& p : reconstruction_->ImageAt(image_id).Points2D()) {
    if (!p.HasPoint3D()) continue;
    for (const TrackElement& e : reconstruction_->Point3DAt(p.point3D_id).track.Elements()) {
      if (e.image_id != image_id) shared[e.image_id] += 1;
    }
  }
  std::vector<std::pair<size_t, image_t>> ranked;
  for (const auto& [id, n] : shared) ranked.emplace_back(n, id);
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<image_t> bundle;
  for (const auto& entry : ranked) {
    if (static_cast<int>(bundle.size()) + 1 >= options.local_ba_num_images) break;
    bundle.push_back(entry.second);
  }
  return bundle;
}

size_t IncrementalMapper::AdjustLocalBundle(const IncrementalMapperOptions& options,
                                            const ReconstructionBundleAdjustmentOptions& ba_options,
                                            const IncrementalTriangulatorOptions& tri_options,
                                            image_t image_id) {
  BundleAdjustmentConfig config;
  config.image_ids.insert(image_id);
  for (image_t id : FindLocalBundle(options, image_id)) config.image_ids.insert(id);
  for (image_t id : config.image_ids) {
    for (const Point2D& p : reconstruction_->ImageAt(id).Points2D()) {
      if (p.HasPoint3D()) config.variable_point_ids.insert(p.point3D_id);
    }
  }
  // When the local bundle is the whole model, nothing outside holds the gauge.
  const std::vector<image_t>& reg = reconstruction_->RegImageIds();
  if (config.image_ids.size() == reg.size() && reg.size() >= 2)
    config.FixGauge(*reconstruction_, reg[0], reg[1]);
  AdjustGuardingIntrinsics(options, ba_options, config);

  // Points touched by this step: merge, complete, then filter them.
  std::unordered_set<point3D_t> touched = triangulator_.ModifiedPoints3D();
  for (point3D_t id : config.variable_point_ids) touched.insert(id);
  triangulator_.MergeTracks(tri_options, touched);
  triangulator_.CompleteTracks(tri_options, triangulator_.ModifiedPoints3D());
  touched.insert(triangulator_.ModifiedPoints3D().begin(), triangulator_.ModifiedPoints3D().end());
  triangulator_.ClearModifiedPoints3D();
  std::unordered_set<point3D_t> existing;
  for (point3D_t id : touched) {
    if (reconstruction_->ExistsPoint3D(id)) existing.insert(id);
  }
  return reconstruction_->FilterPoints3D(options.filter_max_reproj_error,
                                         options.filter_min_tri_angle, existing);
}

bool IncrementalMapper::AdjustGlobalBundle(
    const IncrementalMapperOptions& options,
    const ReconstructionBundleAdjustmentOptions& ba_options) {
  const std::vector<image_t>& reg = reconstruction_->RegImageIds();
  if (reg.size() < 2) return false;
  BundleAdjustmentConfig config;
  config.image_ids.insert(reg.begin(), reg.end());
  // With pose priors (COLMAP 3.10's pose-prior mapper) the model is moved onto them first and
  // they, as soft constraints, fix the gauge: it comes out in their frame.
  config.use_pose_priors =
      ba_options.pose_priors && AlignToPosePriors(*ba_options.pose_priors, reconstruction_);
  if (!config.use_pose_priors) config.FixGauge(*reconstruction_, reg[0], reg[1]);
  const BundleAdjustmentSummary summary =
      AdjustGuardingIntrinsics(options, ba_options, std::move(config));
  return std::isfinite(summary.final_cost);
}

BundleAdjustmentSummary IncrementalMapper::AdjustGuardingIntrinsics(
    const IncrementalMapperOptions& options,
    const ReconstructionBundleAdjustmentOptions& ba_options, BundleAdjustmentConfig config) {
  const auto is_bogus = [&](const Camera& c) {
    return c.HasBogusParams(options.min_focal_length_ratio, options.max_focal_length_ratio,
                            options.max_extra_param);
  };
  // What the adjustment may move, as it stands: the registered images' cameras and poses and
  // every point (a retry starts again from here).
  std::unordered_map<camera_t, std::vector<double>> cameras_before;
  std::unordered_map<image_t, Rigid3d> poses_before;
  for (image_t id : reconstruction_->RegImageIds()) {
    const Image& image = reconstruction_->ImageAt(id);
    poses_before.emplace(id, image.cam_from_world);
    const Camera& camera = reconstruction_->CameraAt(image.camera_id);
    if (!is_bogus(camera)) cameras_before.emplace(image.camera_id, camera.params);
  }
  std::unordered_map<point3D_t, Eigen::Vector3d> points_before;
  for (const auto& [id, point] : reconstruction_->Points3D()) points_before.emplace(id, point.xyz);

  BundleAdjustmentSummary summary = AdjustReconstruction(ba_options, config, reconstruction_);
  // A camera the adjustment made bogus had its intrinsics pulled where the observations do not
  // hold them (two views, or an image seen from few points, cannot fix a focal length and a
  // distortion of its own): COLMAP's bounds would then drop its observations from registration,
  // and an initial pair whose cameras both went so could register no third image. Such a camera
  // is put back and held, and the adjustment runs again from where it started.
  bool retry = false;
  for (const auto& [camera_id, params] : cameras_before) {
    Camera& camera = reconstruction_->CameraAt(camera_id);
    if (!is_bogus(camera)) continue;
    camera.params = params;
    config.constant_camera_ids.insert(camera_id);
    retry = true;
  }
  if (!retry) return summary;
  for (const auto& [camera_id, params] : cameras_before) {
    if (!config.constant_camera_ids.count(camera_id))
      reconstruction_->CameraAt(camera_id).params = params;
  }
  for (const auto& [id, pose] : poses_before) reconstruction_->ImageAt(id).cam_from_world = pose;
  for (const auto& [id, xyz] : points_before) {
    if (reconstruction_->ExistsPoint3D(id)) reconstruction_->Point3DAt(id).xyz = xyz;
  }
  return AdjustReconstruction(ba_options, config, reconstruction_);
}

size_t IncrementalMapper::FilterPoints(const IncrementalMapperOptions& options) {
  return reconstruction_->FilterAllPoints3D(options.filter_max_reproj_error,
                                            options.filter_min_tri_angle);
}

size_t IncrementalMapper::FilterImages(const IncrementalMapperOptions& options) {
  // As COLMAP: a small model's intrinsics are still moving a lot, so its images are kept
  // whatever their camera looks like (a bogus camera is estimated again at the next
  // registration instead).
  constexpr size_t kMinNumImages = 20;
  if (reconstruction_->NumRegImages() < kMinNumImages) return 0;
  return reconstruction_
      ->FilterImages(options.min_focal_length_ratio, options.max_focal_length_ratio,
                     options.max_extra_param)
      .size();
}

}  // namespace edgesfm
