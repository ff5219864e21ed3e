#include "sfm/global_mapper.h"

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

namespace edgesfm {
namespace {

// Union-find over dense indices, with path halving.
class DisjointSets {
 public:
  explicit DisjointSets(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  size_t Find(size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Union(size_t a, size_t b) {
    a = Find(a);
    b = Find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<size_t> parent_;
};

// The images of the largest connected part of the graph over the images with a rotation
// (ties: the part holding the smallest image id), sorted.
std::vector<image_t> LargestComponent(
    const GlobalMapperOptions& options, const CorrespondenceGraph& graph,
    const std::unordered_map<image_t, Eigen::Quaterniond>& rotations) {
  std::vector<image_t> ids;
  for (const auto& entry : rotations) ids.push_back(entry.first);
  std::sort(ids.begin(), ids.end());
  std::unordered_map<image_t, size_t> index;
  for (size_t i = 0; i < ids.size(); ++i) index[ids[i]] = i;
  DisjointSets sets(ids.size());
  for (const auto& [pair_id, pair] : graph.ImagePairs()) {
    if (pair.num_correspondences < static_cast<size_t>(options.min_num_matches)) continue;
    const auto [a, b] = PairIdToImagePair(pair_id);
    if (index.count(a) && index.count(b)) sets.Union(index[a], index[b]);
  }
  std::unordered_map<size_t, size_t> sizes;
  for (size_t i = 0; i < ids.size(); ++i) sizes[sets.Find(i)] += 1;
  size_t best = 0, best_size = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const size_t root = sets.Find(i);
    if (sizes[root] > best_size) {
      best = root;
      best_size = sizes[root];
    }
  }
  std::vector<image_t> component;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (sizes[sets.Find(i)] >= 2 && sets.Find(i) == best) component.push_back(ids[i]);
  }
  return component;
}

using KeypointTrack = std::vector<TrackElement>;

// Tracks over `images`: keypoints joined by the graph's correspondences, pair by pair from the
// pairs with most correspondences, a join refused when the two tracks see a common image (a
// wrong match would otherwise chain tracks into one that sees images twice). Longest first,
// then by first element.
std::vector<KeypointTrack> BuildTracks(const GlobalMapperOptions& options,
                                       const Reconstruction& input,
                                       const CorrespondenceGraph& graph,
                                       const std::vector<image_t>& images) {
  std::unordered_map<image_t, size_t> offset;
  std::vector<image_t> image_of;
  for (image_t id : images) {
    offset[id] = image_of.size();
    image_of.insert(image_of.end(), input.ImageAt(id).NumPoints2D(), id);
  }
  DisjointSets sets(image_of.size());
  // Images seen by each root's track (small-to-large merging).
  std::unordered_map<size_t, std::vector<image_t>> seen;
  const auto images_of = [&](size_t root) -> std::vector<image_t>& {
    auto it = seen.find(root);
    if (it == seen.end()) it = seen.emplace(root, std::vector<image_t>{image_of[root]}).first;
    return it->second;
  };
  std::vector<std::pair<size_t, image_pair_t>> pairs;
  for (const auto& [pair_id, pair] : graph.ImagePairs()) {
    const auto [a, b] = PairIdToImagePair(pair_id);
    if (offset.count(a) && offset.count(b)) pairs.emplace_back(pair.num_correspondences, pair_id);
  }
  std::sort(pairs.begin(), pairs.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first > y.first : x.second < y.second;
  });
  for (const auto& pair : pairs) {
    const auto [a, b] = PairIdToImagePair(pair.second);
    for (const auto& [ia, ib] : graph.FindCorrespondencesBetweenImages(a, b)) {
      const size_t ra = sets.Find(offset[a] + ia), rb = sets.Find(offset[b] + ib);
      if (ra == rb) continue;
      std::vector<image_t>& sa = images_of(ra);
      std::vector<image_t>& sb = images_of(rb);
      const std::vector<image_t>& small = sa.size() < sb.size() ? sa : sb;
      const std::vector<image_t>& large = sa.size() < sb.size() ? sb : sa;
      bool conflict = false;
      for (image_t id : small) conflict |= std::find(large.begin(), large.end(), id) != large.end();
      if (conflict) continue;
      std::vector<image_t> merged = large;
      merged.insert(merged.end(), small.begin(), small.end());
      seen.erase(ra);
      seen.erase(rb);
      sets.Union(ra, rb);
      seen[sets.Find(ra)] = std::move(merged);
    }
  }
  std::unordered_map<size_t, KeypointTrack> by_root;
  for (image_t id : images) {
    const size_t n = input.ImageAt(id).NumPoints2D();
    for (size_t k = 0; k < n; ++k) {
      if (!graph.HasCorrespondences(id, static_cast<point2D_t>(k))) continue;
      by_root[sets.Find(offset[id] + k)].emplace_back(id, static_cast<point2D_t>(k));
    }
  }
  std::vector<KeypointTrack> tracks;
  for (auto& [root, track] : by_root) {
    if (track.size() < static_cast<size_t>(options.min_track_length)) continue;
    tracks.push_back(std::move(track));
  }
  const auto key = [](const KeypointTrack& t) {
    return std::make_pair(t[0].image_id, t[0].point2D_idx);
  };
  std::sort(tracks.begin(), tracks.end(), [&](const KeypointTrack& a, const KeypointTrack& b) {
    return a.size() != b.size() ? a.size() > b.size() : key(a) < key(b);
  });
  // The longest tracks until every image they see has max_tracks_per_image.
  std::unordered_map<image_t, int> count;
  std::vector<KeypointTrack> selected;
  for (KeypointTrack& track : tracks) {
    bool wanted = false;
    for (const TrackElement& e : track) wanted |= count[e.image_id] < options.max_tracks_per_image;
    if (!wanted) continue;
    for (const TrackElement& e : track) count[e.image_id] += 1;
    selected.push_back(std::move(track));
  }
  return selected;
}

}  // namespace

Reconstruction PositionImages(const GlobalMapperOptions& options, const Reconstruction& input,
                              const CorrespondenceGraph& graph,
                              const std::unordered_map<image_t, Eigen::Quaterniond>& rotations,
                              GlobalPositioningSummary* summary) {
  GlobalPositioningSummary local;
  GlobalPositioningSummary& s = summary ? *summary : local;
  s = GlobalPositioningSummary();
  s.num_images_with_rotation = rotations.size();
  Reconstruction model = input;
  model.SetUp(graph);
  const std::vector<image_t> images = LargestComponent(options, graph, rotations);
  s.num_images_in_component = images.size();
  if (images.size() < 2) return model;
  std::unordered_map<image_t, int> camera_index;
  for (size_t i = 0; i < images.size(); ++i) camera_index[images[i]] = static_cast<int>(i);
  const std::vector<KeypointTrack> tracks = BuildTracks(options, input, graph, images);
  s.num_tracks = tracks.size();

  GlobalPositioningProblem problem;
  problem.num_cameras = static_cast<int>(images.size());
  problem.num_points = static_cast<int>(tracks.size());
  for (size_t t = 0; t < tracks.size(); ++t) {
    for (const TrackElement& e : tracks[t]) {
      const Image& image = input.ImageAt(e.image_id);
      const Eigen::Vector3d ray =
          input.CameraAt(image.camera_id).CamFromImg(image.Point2DAt(e.point2D_idx).xy);
      PositioningObservation ob;
      ob.camera = camera_index.at(e.image_id);
      ob.point = static_cast<int>(t);
      ob.direction = rotations.at(e.image_id).conjugate() * ray.normalized();
      problem.observations.push_back(ob);
    }
  }
  s.num_observations = problem.observations.size();
  const GlobalPositioningResult solved = SolveGlobalPositioning(options.positioning, problem);

  // Inlier observations by angle; images with too few of them are not placed.
  std::vector<bool> inlier(problem.observations.size());
  std::vector<int> inliers_per_camera(images.size(), 0);
  for (size_t o = 0; o < problem.observations.size(); ++o) {
    const PositioningObservation& ob = problem.observations[o];
    inlier[o] = PositioningAngleErrorDeg(solved.centres[ob.camera], solved.points[ob.point],
                                         ob.direction) <= options.max_angle_error_deg;
    if (inlier[o]) inliers_per_camera[ob.camera] += 1;
  }
  std::vector<bool> placed(images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    placed[i] = inliers_per_camera[i] >= options.min_num_inlier_observations;
    if (!placed[i]) continue;
    const Eigen::Quaterniond& rotation = rotations.at(images[i]);
    model.ImageAt(images[i]).cam_from_world = Rigid3d(rotation, -(rotation * solved.centres[i]));
    model.RegisterImage(images[i]);
    s.num_images_positioned += 1;
  }
  size_t o = 0;
  for (size_t t = 0; t < tracks.size(); ++t) {
    Track track;
    for (size_t k = 0; k < tracks[t].size(); ++k, ++o) {
      if (inlier[o] && placed[problem.observations[o].camera]) track.AddElement(tracks[t][k]);
    }
    if (track.Length() < 2) continue;
    s.num_inlier_observations += track.Length();
    model.AddPoint3D(solved.points[t], std::move(track));
  }
  return model;
}

void RefineGlobalModel(const GlobalMapperOptions& options, const Reconstruction& input,
                       const CorrespondenceGraph& graph, Reconstruction* model) {
  if (model->NumRegImages() < 2) return;
  const std::unordered_map<image_t, int> no_other_models;
  IncrementalMapper mapper(&graph, &input, model, &no_other_models);
  ReconstructionBundleAdjustmentOptions ba = options.ba;
  ba.solver.max_num_iterations =
      std::min(ba.solver.max_num_iterations, options.ba_max_num_iterations);
  ba.prior_focal_lengths = PriorFocalLengths(input);
  // The positioned points, before any reprojection test: a robust adjustment brings them and
  // the poses to pixel accuracy, then the outliers go. A camera of one image is held there:
  // while the positions are still rough, the focal length of a camera only one image's
  // observations fix trades off against that image's depth and settles where it does
  // (opensfm-lund with EXIF, seed 2: the street's focal lengths slid to 631-782 px for 728 and
  // its far end bent by 2.7 deg; held, 0 photos off, 1.85 deg worst). A camera many images
  // share is fixed by all of them, and may start from a guess (gum's one camera).
  ReconstructionBundleAdjustmentOptions robust = ba;
  robust.solver.loss_kernel = LossKernel::kCauchy;
  robust.solver.loss_threshold = 2.0;
  robust.hold_per_image_cameras = true;
  robust.two_stage = false;
  mapper.AdjustGlobalBundle(options.mapper, robust);
  mapper.FilterPoints(options.mapper);
  for (image_t id : std::vector<image_t>(model->RegImageIds())) {
    mapper.TriangulateImage(options.triangulation, id);
  }
  for (int round = 0; round < 2; ++round) {
    mapper.CompleteAndMergeTracks(options.triangulation);
    mapper.Retriangulate(options.triangulation);
    for (int i = 0; i < options.ba_max_refinements; ++i) {
      const size_t before = model->ComputeNumObservations();
      mapper.AdjustGlobalBundle(options.mapper, ba);
      size_t changed = mapper.CompleteAndMergeTracks(options.triangulation);
      changed += mapper.FilterPoints(options.mapper);
      if (before == 0 || static_cast<double>(changed) / before < options.ba_max_refinement_change)
        break;
    }
    mapper.FilterImages(options.mapper);
    if (round == 0) ReRegisterContradictedImages(options, graph, &mapper, model);
  }
  model->UpdatePoint3DErrors();
}

size_t ReRegisterContradictedImages(const GlobalMapperOptions& options,
                                    const CorrespondenceGraph& graph, IncrementalMapper* mapper,
                                    Reconstruction* model) {
  const IncrementalMapperOptions& m = options.mapper;
  // Each registered image's epipolar support with each registered partner it shares enough
  // matches with (the support is symmetric: one essential matrix, thresholds averaged).
  std::unordered_map<image_t, std::vector<double>> supports;
  for (const auto& [pair_id, pair] : graph.ImagePairs()) {
    if (pair.num_correspondences < static_cast<size_t>(m.abs_pose_epipolar_min_num_matches))
      continue;
    const auto [a, b] = PairIdToImagePair(pair_id);
    if (!model->IsImageRegistered(a) || !model->IsImageRegistered(b)) continue;
    const Image& image = model->ImageAt(a);
    const double support =
        mapper->EpipolarSupport(a, image.cam_from_world, model->CameraAt(image.camera_id), b,
                                m.abs_pose_epipolar_max_error);
    supports[a].push_back(support);
    supports[b].push_back(support);
  }
  // An image is contradicted by most of its partners (the median), not by one that is
  // itself misplaced.
  std::vector<std::pair<image_t, Rigid3d>> contradicted;
  for (auto& [id, values] : supports) {
    std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
    if (values[values.size() / 2] < m.abs_pose_min_epipolar_support)
      contradicted.emplace_back(id, model->ImageAt(id).cam_from_world);
  }
  std::sort(contradicted.begin(), contradicted.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  for (const auto& [id, pose] : contradicted) model->DeRegisterImage(id);
  size_t registered = 0;
  for (const auto& [id, pose] : contradicted) {
    if (mapper->RegisterNextImage(m, id)) {
      registered += 1;
    } else {
      model->ImageAt(id).cam_from_world = pose;
      model->RegisterImage(id);
    }
    mapper->TriangulateImage(options.triangulation, id);
  }
  return registered;
}

}  // namespace edgesfm
