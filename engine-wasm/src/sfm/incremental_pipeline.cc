#include "sfm/incremental_pipeline.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <unordered_set>

namespace edgesfm {

CorrespondenceGraph BuildCorrespondenceGraph(const Reconstruction& images,
                                             const std::vector<ImagePairMatches>& pairs,
                                             int min_num_matches) {
  CorrespondenceGraph graph;
  std::vector<image_t> ids;
  for (const auto& entry : images.Images()) ids.push_back(entry.first);
  std::sort(ids.begin(), ids.end());
  for (image_t id : ids) graph.AddImage(id, images.ImageAt(id).NumPoints2D());
  for (const ImagePairMatches& pair : pairs) {
    if (pair.type == "undefined" || pair.type == "degenerate" || pair.type == "watermark" ||
        pair.type == "multiple") {
      continue;
    }
    if (static_cast<int>(pair.matches.size()) < min_num_matches) continue;
    if (!graph.ExistsImage(pair.image_id1) || !graph.ExistsImage(pair.image_id2)) continue;
    graph.AddCorrespondences(pair.image_id1, pair.image_id2, pair.matches);
  }
  graph.Finalize();
  return graph;
}

std::vector<IncrementalMapperOptions> InitialPairPasses(const IncrementalMapperOptions& options) {
  // COLMAP's passes: as given, then twice half the inliers and half the angle.
  std::vector<IncrementalMapperOptions> colmap = {options};
  for (int relaxation = 0; relaxation < 2; ++relaxation) {
    colmap.push_back(colmap.back());
    colmap.back().init_min_num_inliers /= 2;
    colmap.push_back(colmap.back());
    colmap.back().init_min_tri_angle /= 2;
  }
  if (options.init_max_forward_motion >= 1) return colmap;
  std::vector<IncrementalMapperOptions> passes;
  for (size_t i = 0; i < colmap.size(); ++i) {
    passes.push_back(colmap[i]);
    const bool last_of_level = i + 1 == colmap.size() ||
                               colmap[i + 1].init_min_num_inliers != colmap[i].init_min_num_inliers;
    if (!last_of_level) continue;
    IncrementalMapperOptions lifted = colmap[i];
    lifted.init_min_forward_motion = options.init_max_forward_motion;
    lifted.init_max_forward_motion = 1;
    lifted.init_min_tri_angle = options.init_min_tri_angle;
    passes.push_back(lifted);
    while (lifted.init_min_tri_angle / 2 >= options.filter_min_tri_angle) {
      lifted.init_min_tri_angle /= 2;
      passes.push_back(lifted);
    }
  }
  return passes;
}

IncrementalPipeline::IncrementalPipeline(const IncrementalPipelineOptions& options,
                                         Reconstruction input,
                                         CorrespondenceGraph correspondence_graph)
    : options_(options), input_(std::move(input)), graph_(std::move(correspondence_graph)) {
  input_.SetUp(graph_);
  options_.ba.prior_focal_lengths = PriorFocalLengths(input_);
}

std::vector<const Reconstruction*> IncrementalPipeline::Models() const {
  std::vector<const Reconstruction*> models;
  for (const Reconstruction& m : models_) models.push_back(&m);
  if (has_current_) models.push_back(&current_);
  return models;
}

ReconstructionBundleAdjustmentOptions IncrementalPipeline::LocalBaOptions() const {
  ReconstructionBundleAdjustmentOptions ba = options_.ba;
  ba.solver.max_num_iterations =
      std::min(ba.solver.max_num_iterations, options_.ba_local_max_num_iterations);
  return ba;
}

ReconstructionBundleAdjustmentOptions IncrementalPipeline::GlobalBaOptions() const {
  ReconstructionBundleAdjustmentOptions ba = options_.ba;
  ba.solver.max_num_iterations =
      std::min(ba.solver.max_num_iterations, options_.ba_global_max_num_iterations);
  return ba;
}

bool IncrementalPipeline::Step() {
  snapshot_due_ = false;
  switch (phase_) {
    case Phase::kStartModel:
      StartModel();
      break;
    case Phase::kGrowModel:
      GrowModel();
      break;
    case Phase::kFinishModel:
      FinishModel();
      break;
    case Phase::kDone:
      break;
  }
  return phase_ != Phase::kDone;
}

void IncrementalPipeline::Run(const std::function<void(const IncrementalPipeline&)>& on_snapshot) {
  while (Step()) {
    if (SnapshotDue() && on_snapshot) on_snapshot(*this);
  }
}

void IncrementalPipeline::CountRegistrations(size_t n) {
  const size_t before = num_registrations_total_;
  num_registrations_total_ += n;
  // Due when the count reaches or passes a multiple of the frequency (an initial pair
  // adds two at once).
  const int freq = options_.snapshot_frames_freq;
  if (freq > 0 && before / freq != num_registrations_total_ / freq) snapshot_due_ = true;
}

size_t IncrementalPipeline::NumImagesHeld() const {
  size_t n = 0;
  for (const auto& [id, image] : input_.Images()) {
    const auto it = num_registrations_.find(id);
    n += (it != num_registrations_.end() && it->second > 0) ||
         (has_current_ && current_.IsImageRegistered(id));
  }
  return n;
}

size_t IncrementalPipeline::NumImagesReachable() const {
  size_t n = 0;
  for (const auto& [id, image] : input_.Images()) {
    n += graph_.ExistsImage(id) && graph_.NumCorrespondencesForImage(id) > 0;
  }
  return n;
}

size_t IncrementalPipeline::NumSharedRegImages() const {
  size_t n = 0;
  for (image_t id : current_.RegImageIds()) {
    const auto it = num_registrations_.find(id);
    n += it != num_registrations_.end() && it->second > 0;
  }
  return n;
}

void IncrementalPipeline::RequestFinish() {
  finish_requested_ = true;
  if (phase_ == Phase::kGrowModel) phase_ = Phase::kFinishModel;
  if (phase_ == Phase::kStartModel) phase_ = Phase::kDone;
}

size_t IncrementalPipeline::ExtendModel(const SeedModel& seed) {
  if (phase_ != Phase::kStartModel || has_current_ || !models_.empty() || num_models_started_ > 0) {
    throw std::invalid_argument("extend model: the pipeline has started already");
  }
  Reconstruction model = input_;
  for (const auto& [camera_id, params] : seed.camera_params) {
    if (!model.ExistsCamera(camera_id)) {
      throw std::invalid_argument("extend model: unknown camera " + std::to_string(camera_id));
    }
    Camera& camera = model.CameraAt(camera_id);
    if (params.size() != camera.params.size()) {
      throw std::invalid_argument("extend model: camera " + std::to_string(camera_id) + " takes " +
                                  std::to_string(camera.params.size()) + " parameters");
    }
    camera.params = params;
  }
  for (const auto& [image_id, cam_from_world] : seed.images) {
    if (!model.ExistsImage(image_id)) {
      throw std::invalid_argument("extend model: unknown image " + std::to_string(image_id));
    }
    if (model.IsImageRegistered(image_id)) continue;
    model.ImageAt(image_id).cam_from_world = cam_from_world;
    model.RegisterImage(image_id);
  }
  size_t left_out = 0;
  for (const auto& [xyz, elements] : seed.points) {
    Track track;
    std::unordered_set<image_t> seen;
    for (const TrackElement& e : elements) {
      const bool usable = model.ExistsImage(e.image_id) && model.IsImageRegistered(e.image_id) &&
                          e.point2D_idx < model.ImageAt(e.image_id).NumPoints2D() &&
                          !model.ImageAt(e.image_id).Point2DAt(e.point2D_idx).HasPoint3D() &&
                          seen.insert(e.image_id).second;
      if (usable) {
        track.AddElement(e);
      } else {
        left_out += 1;
      }
    }
    if (track.Length() < 2) {
      left_out += track.Length();
      continue;
    }
    model.AddPoint3D(xyz, std::move(track));
  }
  current_ = std::move(model);
  has_current_ = true;
  refined_without_registration_ = false;
  num_reg_images_at_retry_ = 0;
  mapper_ = std::make_unique<IncrementalMapper>(&graph_, &input_, &current_, &num_registrations_,
                                                &init_pair_cache_);
  num_models_started_ += 1;
  num_reg_images_at_global_ba_ = current_.NumRegImages();
  num_points_at_global_ba_ = current_.NumPoints3D();
  phase_ = Phase::kGrowModel;
  return left_out;
}

void IncrementalPipeline::StartModel() {
  if (static_cast<int>(models_.size()) >= options_.max_num_models ||
      num_models_started_ >= options_.init_num_trials) {
    phase_ = Phase::kDone;
    return;
  }
  current_ = input_;
  has_current_ = true;
  refined_without_registration_ = false;
  num_reg_images_at_retry_ = 0;
  mapper_ = std::make_unique<IncrementalMapper>(&graph_, &input_, &current_, &num_registrations_,
                                                &init_pair_cache_);
  const bool given_pair = num_models_started_ == 0 && options_.init_image_id1 != kInvalidImageId &&
                          options_.init_image_id2 != kInvalidImageId;
  num_models_started_ += 1;

  // Registers the pair and adjusts the two-view model. A pair whose model keeps too few
  // points to register a third image is a bad start (COLMAP), like one that fails the
  // rules; it is not tried again.
  auto start_from = [&](const IncrementalMapperOptions& mapper_options, image_t id1, image_t id2) {
    if (!mapper_->RegisterInitialImagePair(mapper_options, id1, id2)) return false;
    model_init_pairs_.insert({std::min(id1, id2), std::max(id1, id2)});
    mapper_->AdjustGlobalBundle(options_.mapper, GlobalBaOptions());
    mapper_->FilterPoints(options_.mapper);
    if (current_.NumPoints3D() >= static_cast<size_t>(options_.mapper.abs_pose_min_num_inliers))
      return true;
    current_ = input_;
    return false;
  };
  bool initialized = false;
  const std::vector<IncrementalMapperOptions> passes = InitialPairPasses(options_.mapper);
  for (size_t pass = 0; pass < passes.size() && !initialized; ++pass) {
    IncrementalMapperOptions mapper_options = passes[pass];
    // Relaxed passes may pair every image: with a per-image cap the strongest images
    // use up their trials on pairs of small baseline (e.g. photos along the viewing
    // direction) and the wider pairs are never tried.
    if (pass > 0) mapper_options.init_max_reg_trials = std::numeric_limits<int>::max();
    // A relaxation may retry the pairs that failed the stricter thresholds.
    if (pass == 0) {
      mapper_->SetState({}, init_num_reg_trials_, tried_init_pairs_);
    } else {
      // Never again a pair that already started a model (kept or dropped).
      mapper_->SetState({}, {}, model_init_pairs_);
    }
    if (given_pair) {
      initialized = start_from(mapper_options, options_.init_image_id1, options_.init_image_id2);
      continue;
    }
    image_t id1, id2;
    while (!initialized && mapper_->FindInitialImagePair(mapper_options, &id1, &id2)) {
      initialized = start_from(mapper_options, id1, id2);
    }
  }
  for (const auto& [id, n] : mapper_->InitNumRegTrials()) {
    init_num_reg_trials_[id] = std::max(init_num_reg_trials_[id], n);
  }
  tried_init_pairs_.insert(mapper_->TriedInitPairs().begin(), mapper_->TriedInitPairs().end());
  if (!initialized) {
    has_current_ = false;
    mapper_.reset();
    phase_ = Phase::kDone;
    return;
  }
  tried_init_pairs_.insert(model_init_pairs_.begin(), model_init_pairs_.end());
  num_reg_images_at_global_ba_ = current_.NumRegImages();
  num_points_at_global_ba_ = current_.NumPoints3D();
  CountRegistrations(2);
  phase_ = Phase::kGrowModel;
}

void IncrementalPipeline::GrowModel() {
  for (image_t image_id : mapper_->FindNextImages(options_.mapper)) {
    if (!mapper_->RegisterNextImage(options_.mapper, image_id)) continue;
    refined_without_registration_ = false;
    mapper_->TriangulateImage(options_.triangulation, image_id);
    for (int i = 0; i < options_.ba_local_max_refinements; ++i) {
      const size_t before = current_.ComputeNumObservations();
      const size_t changed = mapper_->AdjustLocalBundle(options_.mapper, LocalBaOptions(),
                                                        options_.triangulation, image_id);
      if (before == 0 || static_cast<double>(changed) / before < 0.001) break;
    }
    if (current_.NumRegImages() >= options_.ba_global_images_ratio * num_reg_images_at_global_ba_ ||
        current_.NumPoints3D() >= options_.ba_global_points_ratio * num_points_at_global_ba_) {
      IterativeGlobalRefinement();
      num_reg_images_at_global_ba_ = current_.NumRegImages();
      num_points_at_global_ba_ = current_.NumPoints3D();
    }
    CountRegistrations(1);
    // COLMAP's max_model_overlap: a later model that has reached this many images of
    // earlier ones shares enough to be merged with them; growing it further would only
    // repeat them.
    if (NumSharedRegImages() >= static_cast<size_t>(options_.max_model_overlap))
      phase_ = Phase::kFinishModel;
    return;
  }
  // COLMAP: when no image registers, one global refinement (with retriangulation) may
  // give the remaining images enough points; if they still fail, the model is done.
  // The refined model is a different one, so every image that failed against the old
  // one is tried again (re-registration), but only once the model has grown since the
  // last such round: the refinement filters out images whose camera it made bogus, and an
  // image that registers and is filtered again each round would otherwise be given its
  // trials back forever (opensfm-lund, per-image cameras from the true focal length,
  // cycled between 28 and 29 images). So each further round needs net growth.
  if (!refined_without_registration_) {
    refined_without_registration_ = true;
    IterativeGlobalRefinement();
    if (current_.NumRegImages() > num_reg_images_at_retry_) {
      num_reg_images_at_retry_ = current_.NumRegImages();
      mapper_->ClearRegTrials();
    }
    return;
  }
  phase_ = Phase::kFinishModel;
}

void IncrementalPipeline::IterativeGlobalRefinement() {
  mapper_->CompleteAndMergeTracks(options_.triangulation);
  mapper_->Retriangulate(options_.triangulation);
  for (int i = 0; i < options_.ba_global_max_refinements; ++i) {
    const size_t before = current_.ComputeNumObservations();
    mapper_->AdjustGlobalBundle(options_.mapper, GlobalBaOptions());
    size_t changed = mapper_->CompleteAndMergeTracks(options_.triangulation);
    changed += mapper_->FilterPoints(options_.mapper);
    if (before == 0 ||
        static_cast<double>(changed) / before < options_.ba_global_max_refinement_change)
      break;
  }
  mapper_->FilterImages(options_.mapper);
}

void IncrementalPipeline::FinishModel() {
  // The refinement that ended growth already covers the model.
  if (!refined_without_registration_) IterativeGlobalRefinement();
  current_.UpdatePoint3DErrors();
  // COLMAP's rule: with multiple models, keep a model of at least min(min_model_size,
  // 80% of the images) registered images, but always the first one (a small or sparse
  // collection still gets its model); we also keep a smaller one that is larger than every
  // model kept so far (after a first model of two photos, the later one of nine is the
  // collection's best). A single model is kept unless empty.
  const double min_size =
      std::min(0.8 * input_.NumImages(), static_cast<double>(options_.min_model_size));
  size_t largest = 0;
  for (const Reconstruction& model : models_) largest = std::max(largest, model.NumRegImages());
  const size_t size = current_.NumRegImages();
  const bool keep = size >= 2 && (!options_.multiple_models || size >= min_size || size > largest);
  if (keep) {
    // An earlier model all of whose images this one holds brings no photo of its own: it is
    // dropped, so no model repeats another (a later model reaches them all when the earlier
    // one stalled, e.g. from a weak initial pair).
    const std::vector<image_t>& ids = current_.RegImageIds();
    const std::unordered_set<image_t> held(ids.begin(), ids.end());
    const auto contained = [&](const Reconstruction& model) {
      const std::vector<image_t>& its = model.RegImageIds();
      if (!std::all_of(its.begin(), its.end(), [&](image_t id) { return held.count(id) > 0; }))
        return false;
      for (image_t id : its) num_registrations_[id] -= 1;
      return true;
    };
    models_.erase(std::remove_if(models_.begin(), models_.end(), contained), models_.end());
    for (image_t id : ids) num_registrations_[id] += 1;
    models_.push_back(std::move(current_));
  }
  current_ = Reconstruction();
  has_current_ = false;
  mapper_.reset();
  // Another model only if at least two images with matches are still in no model (COLMAP:
  // stop once all but one image are registered); StartModel ends the loop when none of
  // them can start one.
  const bool remaining = NumImagesReachable() >= NumImagesHeld() + 2;
  phase_ = options_.multiple_models && remaining && !finish_requested_ ? Phase::kStartModel
                                                                       : Phase::kDone;
}

IncrementalPipeline::State IncrementalPipeline::SaveState() const {
  State s;
  s.phase = phase_;
  s.models = models_;
  s.has_current = has_current_;
  if (has_current_) s.current = current_;
  if (mapper_) {
    s.num_reg_trials = mapper_->NumRegTrials();
    s.re_num_trials = mapper_->ReNumTrials();
  }
  s.init_num_reg_trials = init_num_reg_trials_;
  s.tried_init_pairs = tried_init_pairs_;
  s.model_init_pairs = model_init_pairs_;
  s.num_registrations = num_registrations_;
  s.num_registrations_total = num_registrations_total_;
  s.num_reg_images_at_global_ba = num_reg_images_at_global_ba_;
  s.num_points_at_global_ba = num_points_at_global_ba_;
  s.num_models_started = num_models_started_;
  s.refined_without_registration = refined_without_registration_;
  s.num_reg_images_at_retry = num_reg_images_at_retry_;
  return s;
}

void IncrementalPipeline::RestoreState(State s) {
  phase_ = s.phase;
  models_ = std::move(s.models);
  has_current_ = s.has_current;
  current_ = std::move(s.current);
  num_registrations_ = std::move(s.num_registrations);
  num_registrations_total_ = s.num_registrations_total;
  num_reg_images_at_global_ba_ = s.num_reg_images_at_global_ba;
  num_points_at_global_ba_ = s.num_points_at_global_ba;
  num_models_started_ = s.num_models_started;
  refined_without_registration_ = s.refined_without_registration;
  num_reg_images_at_retry_ = s.num_reg_images_at_retry;
  init_num_reg_trials_ = std::move(s.init_num_reg_trials);
  tried_init_pairs_ = std::move(s.tried_init_pairs);
  model_init_pairs_ = std::move(s.model_init_pairs);
  mapper_.reset();
  if (has_current_) {
    mapper_ = std::make_unique<IncrementalMapper>(&graph_, &input_, &current_, &num_registrations_,
                                                  &init_pair_cache_);
    mapper_->SetState(std::move(s.num_reg_trials), init_num_reg_trials_, tried_init_pairs_);
    mapper_->SetReNumTrials(std::move(s.re_num_trials));
  }
}

}  // namespace edgesfm
