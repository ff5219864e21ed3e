#include "sfm/incremental_triangulator.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "geometry/triangulation.h"

namespace edgesfm {

namespace {

// Whether the point is already observed in the image (tracks are short; Image::HasPoint3D
// scans all keypoints).
bool TrackHasImage(const Reconstruction& reconstruction, point3D_t point3D_id, image_t image_id) {
  for (const TrackElement& e : reconstruction.Point3DAt(point3D_id).track.Elements()) {
    if (e.image_id == image_id) return true;
  }
  return false;
}

}  // namespace

double IncrementalTriangulator::ReprojectionError(const Eigen::Vector3d& xyz, image_t image_id,
                                                  point2D_t point2D_idx) const {
  const Image& image = reconstruction_->ImageAt(image_id);
  const Camera& camera = reconstruction_->CameraAt(image.camera_id);
  Eigen::Vector2d projected;
  if (!camera.ImgFromCam(image.cam_from_world * xyz, &projected)) {
    return std::numeric_limits<double>::infinity();
  }
  return (projected - image.Point2DAt(point2D_idx).xy).norm();
}

void IncrementalTriangulator::FindRegisteredCorrespondences(image_t image_id, point2D_t point2D_idx,
                                                            int transitivity,
                                                            std::vector<View>* views) const {
  views->clear();
  std::vector<CorrespondenceGraph::Correspondence> found;
  if (transitivity <= 1) {
    found = graph_->FindCorrespondences(image_id, point2D_idx);
  } else {
    graph_->FindTransitiveCorrespondences(image_id, point2D_idx, transitivity, &found);
  }
  for (const auto& corr : found) {
    if (corr.image_id != image_id && reconstruction_->IsImageRegistered(corr.image_id)) {
      views->push_back({corr.image_id, corr.point2D_idx});
    }
  }
}

bool IncrementalTriangulator::TriangulateViews(const IncrementalTriangulatorOptions& options,
                                               double max_error, const std::vector<View>& views,
                                               Eigen::Vector3d* xyz,
                                               std::vector<View>* inliers) const {
  const double min_angle = options.min_angle_deg * M_PI / 180;
  std::vector<Rigid3d> poses;
  std::vector<Eigen::Vector3d> rays;
  std::vector<Eigen::Vector3d> centers;
  for (const View& v : views) {
    const Image& image = reconstruction_->ImageAt(v.image_id);
    poses.push_back(image.cam_from_world);
    rays.push_back(
        reconstruction_->CameraAt(image.camera_id).CamFromImg(image.Point2DAt(v.point2D_idx).xy));
    centers.push_back(image.ProjectionCenter());
  }
  auto consensus = [&](const Eigen::Vector3d& x, std::vector<int>* members, double* total_error) {
    members->clear();
    *total_error = 0;
    for (size_t i = 0; i < views.size(); ++i) {
      if (!HasPointPositiveDepth(poses[i], rays[i], x)) continue;
      const double e = ReprojectionError(x, views[i].image_id, views[i].point2D_idx);
      if (e <= max_error) {
        members->push_back(static_cast<int>(i));
        *total_error += e;
      }
    }
  };
  auto max_angle = [&](const Eigen::Vector3d& x, const std::vector<int>& members) {
    double best = 0;
    for (size_t a = 0; a < members.size(); ++a) {
      for (size_t b = a + 1; b < members.size(); ++b) {
        best = std::max(best,
                        CalculateTriangulationAngle(centers[members[a]], centers[members[b]], x));
      }
    }
    return best;
  };
  // Exhaustive over view pairs (tracks are short): the hypothesis with most inliers.
  std::vector<int> best_members;
  double best_error = std::numeric_limits<double>::infinity();
  Eigen::Vector3d best_xyz;
  std::vector<int> members;
  for (size_t a = 0; a < views.size(); ++a) {
    for (size_t b = a + 1; b < views.size(); ++b) {
      Eigen::Vector3d x;
      if (!TriangulatePoint(poses[a], poses[b], rays[a], rays[b], &x)) continue;
      if (CalculateTriangulationAngle(centers[a], centers[b], x) < min_angle) continue;
      double error;
      consensus(x, &members, &error);
      if (members.size() > best_members.size() ||
          (members.size() == best_members.size() && error < best_error)) {
        best_members = members;
        best_error = error;
        best_xyz = x;
      }
    }
    // The first view is the new keypoint: every hypothesis must involve it unless the
    // track is long enough to afford trying others.
    if (views.size() <= 3) break;
  }
  if (best_members.size() < 2) return false;
  // Refine on the inliers, then re-check them.
  std::vector<Rigid3d> inlier_poses;
  std::vector<Eigen::Vector3d> inlier_rays;
  for (int i : best_members) {
    inlier_poses.push_back(poses[i]);
    inlier_rays.push_back(rays[i]);
  }
  Eigen::Vector3d refined;
  if (TriangulateMultiViewPoint(inlier_poses, inlier_rays, &refined)) {
    double error;
    consensus(refined, &members, &error);
    if (members.size() >= best_members.size()) {
      best_members = members;
      best_xyz = refined;
    }
  }
  if (best_members.size() < 2 || max_angle(best_xyz, best_members) < min_angle) return false;
  *xyz = best_xyz;
  inliers->clear();
  for (int i : best_members) inliers->push_back(views[i]);
  return true;
}

size_t IncrementalTriangulator::TriangulateImage(const IncrementalTriangulatorOptions& options,
                                                 image_t image_id) {
  size_t num_added = 0;
  const size_t num_points2D = reconstruction_->ImageAt(image_id).NumPoints2D();
  std::vector<View> corrs;
  for (point2D_t idx = 0; idx < num_points2D; ++idx) {
    FindRegisteredCorrespondences(image_id, idx, options.max_transitivity, &corrs);
    if (corrs.empty()) continue;
    const Point2D& point2D = reconstruction_->ImageAt(image_id).Point2DAt(idx);
    if (point2D.HasPoint3D()) continue;  // extended by CompleteImage/CompleteTracks

    // Continue: join the best-fitting existing point of a partner keypoint.
    point3D_t best_point = kInvalidPoint3DId;
    double best_error = options.continue_max_error;
    std::vector<View> free_views = {{image_id, idx}};
    for (const View& v : corrs) {
      const Point2D& partner = reconstruction_->ImageAt(v.image_id).Point2DAt(v.point2D_idx);
      if (!partner.HasPoint3D()) {
        free_views.push_back(v);
        continue;
      }
      if (TrackHasImage(*reconstruction_, partner.point3D_id, image_id)) continue;
      const double e =
          ReprojectionError(reconstruction_->Point3DAt(partner.point3D_id).xyz, image_id, idx);
      if (e <= best_error) {
        best_error = e;
        best_point = partner.point3D_id;
      }
    }
    if (best_point != kInvalidPoint3DId) {
      reconstruction_->AddObservation(best_point, TrackElement(image_id, idx));
      modified_point3D_ids_.insert(best_point);
      num_added += 1;
      continue;
    }

    // Create: a new point from this keypoint and its partners without a point.
    if (free_views.size() < 2) continue;
    if (options.ignore_two_view_tracks && corrs.size() == 1 &&
        graph_->IsTwoViewObservation(image_id, idx)) {
      continue;
    }
    Eigen::Vector3d xyz;
    std::vector<View> inliers;
    if (!TriangulateViews(options, options.create_max_error, free_views, &xyz, &inliers)) continue;
    Track track;
    for (const View& v : inliers) track.AddElement(v.image_id, v.point2D_idx);
    modified_point3D_ids_.insert(reconstruction_->AddPoint3D(xyz, track));
    num_added += inliers.size();
  }
  return num_added;
}

size_t IncrementalTriangulator::CompleteImage(const IncrementalTriangulatorOptions& options,
                                              image_t image_id) {
  std::unordered_set<point3D_t> ids;
  for (const Point2D& p : reconstruction_->ImageAt(image_id).Points2D()) {
    if (p.HasPoint3D()) ids.insert(p.point3D_id);
  }
  return CompleteTracks(options, ids);
}

size_t IncrementalTriangulator::CompleteTracks(const IncrementalTriangulatorOptions& options,
                                               const std::unordered_set<point3D_t>& point3D_ids) {
  size_t num_added = 0;
  std::vector<point3D_t> ids(point3D_ids.begin(), point3D_ids.end());
  std::sort(ids.begin(), ids.end());
  std::vector<View> corrs;
  for (point3D_t id : ids) {
    if (!reconstruction_->ExistsPoint3D(id)) continue;
    std::vector<TrackElement> queue = reconstruction_->Point3DAt(id).track.Elements();
    for (size_t q = 0; q < queue.size(); ++q) {
      FindRegisteredCorrespondences(queue[q].image_id, queue[q].point2D_idx,
                                    options.complete_max_transitivity, &corrs);
      for (const View& v : corrs) {
        const Image& image = reconstruction_->ImageAt(v.image_id);
        if (image.Point2DAt(v.point2D_idx).HasPoint3D() ||
            TrackHasImage(*reconstruction_, id, v.image_id))
          continue;
        if (ReprojectionError(reconstruction_->Point3DAt(id).xyz, v.image_id, v.point2D_idx) >
            options.complete_max_error) {
          continue;
        }
        reconstruction_->AddObservation(id, TrackElement(v.image_id, v.point2D_idx));
        queue.emplace_back(v.image_id, v.point2D_idx);
        modified_point3D_ids_.insert(id);
        num_added += 1;
      }
    }
  }
  return num_added;
}

size_t IncrementalTriangulator::CompleteAllTracks(const IncrementalTriangulatorOptions& options) {
  return CompleteTracks(options, reconstruction_->Point3DIds());
}

bool IncrementalTriangulator::TryMerge(const IncrementalTriangulatorOptions& options, point3D_t a,
                                       point3D_t b, point3D_t* merged) {
  const Point3D& pa = reconstruction_->Point3DAt(a);
  const Point3D& pb = reconstruction_->Point3DAt(b);
  const double wa = static_cast<double>(pa.track.Length());
  const double wb = static_cast<double>(pb.track.Length());
  const Eigen::Vector3d xyz = (wa * pa.xyz + wb * pb.xyz) / (wa + wb);
  for (const Point3D* p : {&pa, &pb}) {
    for (const TrackElement& e : p->track.Elements()) {
      if (ReprojectionError(xyz, e.image_id, e.point2D_idx) > options.merge_max_error) return false;
    }
  }
  // Two observations in one image would make the track inconsistent.
  for (const TrackElement& e : pb.track.Elements()) {
    if (TrackHasImage(*reconstruction_, a, e.image_id)) return false;
  }
  *merged = reconstruction_->MergePoints3D(a, b);
  return true;
}

size_t IncrementalTriangulator::MergeTracks(const IncrementalTriangulatorOptions& options,
                                            const std::unordered_set<point3D_t>& point3D_ids) {
  size_t num_merged = 0;
  std::vector<point3D_t> ids(point3D_ids.begin(), point3D_ids.end());
  std::sort(ids.begin(), ids.end());
  for (point3D_t id : ids) {
    bool merged_any = true;
    while (merged_any && reconstruction_->ExistsPoint3D(id)) {
      merged_any = false;
      for (const TrackElement& e : reconstruction_->Point3DAt(id).track.Elements()) {
        for (const auto& corr : graph_->FindCorrespondences(e.image_id, e.point2D_idx)) {
          if (!reconstruction_->IsImageRegistered(corr.image_id)) continue;
          const Point2D& partner =
              reconstruction_->ImageAt(corr.image_id).Point2DAt(corr.point2D_idx);
          if (!partner.HasPoint3D() || partner.point3D_id == id) continue;
          point3D_t merged;
          const point3D_t other = partner.point3D_id;
          if (!TryMerge(options, id, other, &merged)) continue;
          modified_point3D_ids_.erase(id);
          modified_point3D_ids_.erase(other);
          modified_point3D_ids_.insert(merged);
          id = merged;
          num_merged += 1;
          merged_any = true;
          break;
        }
        if (merged_any) break;
      }
    }
  }
  return num_merged;
}

size_t IncrementalTriangulator::MergeAllTracks(const IncrementalTriangulatorOptions& options) {
  return MergeTracks(options, reconstruction_->Point3DIds());
}

size_t IncrementalTriangulator::Retriangulate(const IncrementalTriangulatorOptions& options) {
  std::vector<image_pair_t> pair_ids;
  for (const auto& entry : graph_->ImagePairs()) pair_ids.push_back(entry.first);
  std::sort(pair_ids.begin(), pair_ids.end());
  size_t num_added = 0;
  for (image_pair_t pair_id : pair_ids) {
    const auto [image_id1, image_id2] = PairIdToImagePair(pair_id);
    if (!reconstruction_->IsImageRegistered(image_id1) ||
        !reconstruction_->IsImageRegistered(image_id2))
      continue;
    const CorrespondenceGraph::Matches matches =
        graph_->FindCorrespondencesBetweenImages(image_id1, image_id2);
    const Image& image1 = reconstruction_->ImageAt(image_id1);
    const Image& image2 = reconstruction_->ImageAt(image_id2);
    size_t num_triangulated = 0;
    for (const auto& [idx1, idx2] : matches) {
      const Point2D& p1 = image1.Point2DAt(idx1);
      num_triangulated += p1.HasPoint3D() && p1.point3D_id == image2.Point2DAt(idx2).point3D_id;
    }
    if (matches.empty() || num_triangulated >= options.re_min_ratio * matches.size()) continue;
    int& trials = re_num_trials_[pair_id];
    if (trials >= options.re_max_trials) continue;
    trials += 1;
    for (const auto& [idx1, idx2] : matches) {
      const View v1{image_id1, idx1}, v2{image_id2, idx2};
      const Point2D& p1 = image1.Point2DAt(idx1);
      const Point2D& p2 = image2.Point2DAt(idx2);
      // Two points already: merging them here would likely join unrelated points.
      if (p1.HasPoint3D() && p2.HasPoint3D()) continue;
      if (p1.HasPoint3D() || p2.HasPoint3D()) {
        const point3D_t id = p1.HasPoint3D() ? p1.point3D_id : p2.point3D_id;
        const View& free = p1.HasPoint3D() ? v2 : v1;
        if (TrackHasImage(*reconstruction_, id, free.image_id) ||
            ReprojectionError(reconstruction_->Point3DAt(id).xyz, free.image_id, free.point2D_idx) >
                options.re_max_error) {
          continue;
        }
        reconstruction_->AddObservation(id, TrackElement(free.image_id, free.point2D_idx));
        modified_point3D_ids_.insert(id);
        num_added += 1;
        continue;
      }
      if (options.ignore_two_view_tracks && graph_->IsTwoViewObservation(image_id1, idx1)) continue;
      Eigen::Vector3d xyz;
      std::vector<View> inliers;
      if (!TriangulateViews(options, options.create_max_error, {v1, v2}, &xyz, &inliers)) continue;
      Track track;
      for (const View& v : inliers) track.AddElement(v.image_id, v.point2D_idx);
      modified_point3D_ids_.insert(reconstruction_->AddPoint3D(xyz, track));
      num_added += inliers.size();
    }
  }
  return num_added;
}

}  // namespace edgesfm
