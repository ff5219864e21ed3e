// The incremental mapping pipeline of spec 2.12 (PipelineSpec `incremental`), after
// COLMAP's IncrementalMapperController (Schönberger & Frahm, "Structure-from-Motion
// Revisited", CVPR 2016): models are started from an initial pair (given, or chosen,
// with COLMAP's relaxations when none qualifies, see InitialPairPasses), grown by
// next-best-view registration with local bundle adjustment after each image and global
// refinement (retriangulation + BA) whenever the model has grown by
// `ba_global_images_ratio` / `ba_global_points_ratio` or growth stalls, and finished by
// a last global refinement; with `multiple_models`, further models
// start from images no earlier model registered, up to `max_num_models`, each grown only
// until it shares `max_model_overlap` images with earlier models (enough to merge them by
// a similarity, not worth repeating them; an earlier model all of whose images a later one
// holds is dropped), and the loop ends when no image outside every model can start one, or
// all but one image are held (COLMAP's IncrementalPipeline).
//
// The pipeline is a resumable state machine: Step() does one unit of work (start a
// model, register one image, refine a stalled model, or finish a model), so a caller can report
// progress, take snapshots every `snapshot_frames_freq` registrations, and checkpoint
// (sfm/mapping_checkpoint.h) between steps. Random choices derive from `seed` and the
// decision they serve, so a run is deterministic and a resumed run continues alike.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sfm/incremental_mapper.h"

namespace edgesfm {

struct IncrementalPipelineOptions {
  // Spec 2.12 PipelineSpec (incremental).
  uint64_t seed = 0;
  int snapshot_frames_freq = 50;             // <= 0: never
  image_t init_image_id1 = kInvalidImageId;  // init_image_pair, both or neither
  image_t init_image_id2 = kInvalidImageId;
  bool multiple_models = true;
  int max_num_models = 50;
  // COLMAP's bounds: a later model stops growing once this many of its images are held by
  // earlier models; at most this many models are started (kept or dropped).
  int max_model_overlap = 20;
  int init_num_trials = 200;
  int min_num_matches = 15;
  // With multiple_models, models with fewer images than min(min_model_size, 80% of the
  // images) are dropped (COLMAP's rule), except one larger than every model kept before.
  int min_model_size = 10;
  // Spec 2.12 BundleAdjustmentSpec, for local and global adjustments.
  ReconstructionBundleAdjustmentOptions ba;
  int ba_local_max_num_iterations = 25;
  int ba_global_max_num_iterations = 50;
  int ba_local_max_refinements = 2;
  double ba_global_images_ratio = 1.1;
  double ba_global_points_ratio = 1.1;
  int ba_global_max_refinements = 5;
  double ba_global_max_refinement_change = 0.0005;
  IncrementalMapperOptions mapper;
  IncrementalTriangulatorOptions triangulation;
};

// The initial-pair passes, in order. COLMAP's: the options as given, then twice half
// the inliers and half the angle, always under the forward-motion limit. After the last
// of COLMAP's passes at each inlier count comes the same count for the pairs the limit
// turned away, the angle halved from the given one down to the filtering angle
// (`filter_min_tri_angle`: a pair whose median angle reaches it keeps most of its
// points). Along a street photographed while walking or driving every baseline lies
// near the viewing direction, so no pair passes the limit with its true pose, and the
// triangulation angles of true poses are small (smaller still under the initial
// focal-length guess); the pairs that do pass COLMAP's relaxed passes there are weak
// ones whose wrong poses show large angles. A well-supported pair is therefore tried
// along the viewing direction before the support drops.
std::vector<IncrementalMapperOptions> InitialPairPasses(const IncrementalMapperOptions& options);

// Verified matches of one image pair (spec 2.14 two_view_geometries.json).
struct ImagePairMatches {
  image_t image_id1 = kInvalidImageId;
  image_t image_id2 = kInvalidImageId;
  CorrespondenceGraph::Matches matches;
  // Spec 2.14 type; pairs typed `undefined`, `degenerate`, `watermark` or `multiple`
  // carry no usable geometry and are skipped, as COLMAP does.
  std::string type = "calibrated";
};

// The correspondence graph of `images` from the verified pairs with at least
// `min_num_matches` matches.
CorrespondenceGraph BuildCorrespondenceGraph(const Reconstruction& images,
                                             const std::vector<ImagePairMatches>& pairs,
                                             int min_num_matches);

// A model to continue mapping from (IncrementalPipeline::ExtendModel), in the input's ids:
// each camera's parameters (cameras not listed keep the input's), the registered images with
// their poses, and the 3D points with their tracks.
struct SeedModel {
  std::unordered_map<camera_t, std::vector<double>> camera_params;
  std::vector<std::pair<image_t, Rigid3d>> images;
  std::vector<std::pair<Eigen::Vector3d, std::vector<TrackElement>>> points;
};

class IncrementalPipeline {
 public:
  enum class Phase : int { kStartModel = 0, kGrowModel = 1, kFinishModel = 2, kDone = 3 };

  // `input`: cameras and images with keypoints, nothing registered.
  IncrementalPipeline(const IncrementalPipelineOptions& options, Reconstruction input,
                      CorrespondenceGraph correspondence_graph);

  // Continues from `seed` instead of starting from an initial pair (before the first Step):
  // it becomes the model being built, and the steps grow it as any model, so the input's
  // images it does not hold are registered into it where they can be (next-best-view
  // registration, triangulation, local and global bundle adjustment), and it is finished
  // by the last global refinement. For models mapped apart and joined (hierarchical
  // mapping): an image no part registered is tried against the whole model. Track
  // elements that cannot be kept (an image not registered, a keypoint out of range or
  // observing another point already, a second keypoint of one image) are left out, and a
  // point left with fewer than two is not added. Returns the number of elements left out;
  // throws std::invalid_argument for an unknown camera or image, or parameters of the
  // wrong count.
  size_t ExtendModel(const SeedModel& seed);

  // One unit of work; false once the pipeline is done.
  bool Step();
  // Runs to the end, calling `on_snapshot` every snapshot_frames_freq registrations.
  void Run(const std::function<void(const IncrementalPipeline&)>& on_snapshot = nullptr);

  Phase phase() const { return phase_; }
  bool Done() const { return phase_ == Phase::kDone; }
  // True right after a Step that made the registration count reach or pass a multiple
  // of snapshot_frames_freq.
  bool SnapshotDue() const { return snapshot_due_; }
  size_t NumRegistrations() const { return num_registrations_total_; }
  // Progress that tells the truth: distinct images held by any model (finished or being
  // built), against the images that can register at all (those with verified matches).
  size_t NumImagesHeld() const;
  size_t NumImagesReachable() const;
  // Ends the run early (time budget): the model being built is finished (refined and
  // kept by the usual rules) and no further model is started.
  void RequestFinish();

  // Finished models, then the model being built (if any).
  std::vector<const Reconstruction*> Models() const;
  const std::vector<Reconstruction>& FinishedModels() const { return models_; }
  const Reconstruction& Input() const { return input_; }
  const CorrespondenceGraph& Graph() const { return graph_; }
  // Pose priors of the input's images (spec 4.12): global adjustments align the model to them
  // and keep them as soft constraints, so the models come out in their frame.
  void SetPosePriors(std::shared_ptr<const ImagePosePriors> priors) {
    options_.ba.pose_priors = std::move(priors);
  }
  const IncrementalPipelineOptions& Options() const { return options_; }

  // Everything a checkpoint needs (sfm/mapping_checkpoint.h).
  struct State {
    Phase phase = Phase::kStartModel;
    std::vector<Reconstruction> models;
    bool has_current = false;
    Reconstruction current;
    std::unordered_map<image_t, int> num_reg_trials;      // of the current model
    std::unordered_map<image_pair_t, int> re_num_trials;  // of the current model
    std::unordered_map<image_t, int> init_num_reg_trials;
    std::set<std::pair<image_t, image_t>> tried_init_pairs;
    std::set<std::pair<image_t, image_t>> model_init_pairs;
    std::unordered_map<image_t, int> num_registrations;  // per image, over finished models
    size_t num_registrations_total = 0;
    size_t num_reg_images_at_global_ba = 0;
    size_t num_points_at_global_ba = 0;
    int num_models_started = 0;
    // Growth stalled and a global refinement was run to let the remaining images register.
    bool refined_without_registration = false;
    // Registered images when registration trials were last given back (re-registration).
    size_t num_reg_images_at_retry = 0;
  };
  State SaveState() const;
  void RestoreState(State state);

 private:
  ReconstructionBundleAdjustmentOptions LocalBaOptions() const;
  ReconstructionBundleAdjustmentOptions GlobalBaOptions() const;
  void StartModel();
  void GrowModel();
  void FinishModel();
  // Retriangulation, then global BA with track completion/merging and filtering,
  // repeated while they change more than ba_global_max_refinement_change of the
  // observations (COLMAP's IterativeGlobalRefinement).
  void IterativeGlobalRefinement();
  void CountRegistrations(size_t n);
  // Registered images of the current model that earlier models hold.
  size_t NumSharedRegImages() const;

  IncrementalPipelineOptions options_;
  Reconstruction input_;
  CorrespondenceGraph graph_;
  Phase phase_ = Phase::kStartModel;
  std::vector<Reconstruction> models_;
  bool has_current_ = false;
  Reconstruction current_;
  std::unique_ptr<IncrementalMapper> mapper_;
  std::unordered_map<image_t, int> num_registrations_;
  // Initial pairs tried and initialisation trials per image, kept across models so a
  // discarded model's pair is not tried again.
  std::unordered_map<image_t, int> init_num_reg_trials_;
  std::set<std::pair<image_t, image_t>> tried_init_pairs_;
  // Pairs that started a model: not retried even by relaxed passes.
  std::set<std::pair<image_t, image_t>> model_init_pairs_;
  size_t num_registrations_total_ = 0;
  size_t num_reg_images_at_global_ba_ = 0;
  size_t num_points_at_global_ba_ = 0;
  int num_models_started_ = 0;
  bool refined_without_registration_ = false;
  size_t num_reg_images_at_retry_ = 0;
  bool snapshot_due_ = false;
  bool finish_requested_ = false;
  // Initial-pair geometries by pair: estimated once, shared by passes and models.
  InitialPairCache init_pair_cache_;
};

}  // namespace edgesfm
