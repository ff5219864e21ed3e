// Flat C API of incremental mapping (sfm/incremental_pipeline.h), and of global mapping
// (sfm/global_mapper.h) over the same input: create a pipeline
// from arrays (cameras, keypoints, verified matches), step it (the caller takes
// snapshots between steps), read the models, and checkpoint/restore it. Follows the
// binding convention of bindings/export.h: numbers and pointers only, results behind
// handles that own their memory.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "bindings/export.h"
#include "bindings/guard.h"
#include "bindings/input_checks.h"
#include "sfm/global_mapper.h"
#include "sfm/incremental_pipeline.h"
#include "sfm/mapping_checkpoint.h"

namespace {

using edgesfm::image_t;

// Spec 2.14 two-view geometry types, by code (bindings pass numbers).
const char* const kPairTypes[] = {"undefined",           "degenerate", "calibrated",
                                  "uncalibrated",        "planar",     "panoramic",
                                  "planar_or_panoramic", "watermark",  "multiple"};

// options (float64[17]): seed, snapshot_frames_freq, init_image1 (index or -1),
// init_image2, multiple_models, max_num_models, min_num_matches, min_model_size,
// ba two_stage (0/1), refine_focal_length, refine_principal_point, refine_extra_params,
// max_num_iterations, loss_kernel (0 squared .. 4 tukey), loss_threshold,
// init_min_tri_angle (degrees; <= 0 keeps COLMAP's 16), cubemap_rig_face_size (0: off; the
// spherical pipeline's rig adjustment, sfm/bundle_adjustment_config.h).
edgesfm::IncrementalPipelineOptions ParseOptions(const double* o) {
  edgesfm::IncrementalPipelineOptions options;
  if (o == nullptr) return options;
  options.seed = static_cast<uint64_t>(o[0]);
  options.mapper.seed = options.seed;
  options.snapshot_frames_freq = static_cast<int>(o[1]);
  if (o[2] >= 0 && o[3] >= 0) {
    options.init_image_id1 = static_cast<image_t>(o[2]) + 1;
    options.init_image_id2 = static_cast<image_t>(o[3]) + 1;
  }
  options.multiple_models = o[4] != 0;
  options.max_num_models = static_cast<int>(o[5]);
  options.min_num_matches = static_cast<int>(o[6]);
  options.min_model_size = static_cast<int>(o[7]);
  options.ba.two_stage = o[8] != 0;
  options.ba.solver.refine_focal_length = o[9] != 0;
  options.ba.solver.refine_principal_point = o[10] != 0;
  options.ba.solver.refine_extra_params = o[11] != 0;
  options.ba.solver.max_num_iterations = static_cast<int>(o[12]);
  options.ba.solver.loss_kernel = static_cast<edgesfm::LossKernel>(static_cast<int>(o[13]));
  options.ba.solver.loss_threshold = o[14];
  if (o[15] > 0) options.mapper.init_min_tri_angle = o[15];
  options.ba.cubemap_rig_face_size = static_cast<int>(o[16]);
  return options;
}

// A model flattened for reading out.
struct MappingModel {
  std::vector<double> camera_params;   // all input cameras, input layout
  std::vector<int32_t> image_indices;  // registered images (input index), registration order
  std::vector<double> poses;           // qw qx qy qz tx ty tz per registered image
  std::vector<double> points;          // xyz per point
  std::vector<int32_t> tracks;         // per point: length, then (image index, keypoint) pairs
  double mean_reprojection_error = 0;
};

struct MappingResult {
  std::vector<MappingModel> models;
};

struct Bytes {
  std::vector<uint8_t> data;
};

MappingModel Flatten(const edgesfm::Reconstruction& reconstruction, size_t num_cameras) {
  MappingModel m;
  for (size_t c = 0; c < num_cameras; ++c) {
    const auto& params = reconstruction.CameraAt(static_cast<edgesfm::camera_t>(c + 1)).params;
    m.camera_params.insert(m.camera_params.end(), params.begin(), params.end());
  }
  for (image_t id : reconstruction.RegImageIds()) {
    const edgesfm::Rigid3d& pose = reconstruction.ImageAt(id).cam_from_world;
    m.image_indices.push_back(static_cast<int32_t>(id - 1));
    m.poses.insert(m.poses.end(),
                   {pose.rotation.w(), pose.rotation.x(), pose.rotation.y(), pose.rotation.z(),
                    pose.translation.x(), pose.translation.y(), pose.translation.z()});
  }
  std::vector<edgesfm::point3D_t> ids;
  for (const auto& entry : reconstruction.Points3D()) ids.push_back(entry.first);
  std::sort(ids.begin(), ids.end());
  // COLMAP's mean reprojection error: the mean over points of each point's mean error
  // over its track (Reconstruction::ComputeMeanReprojectionError).
  double error_sum = 0;
  size_t num_errors = 0;
  for (edgesfm::point3D_t id : ids) {
    const edgesfm::Point3D& point = reconstruction.Point3DAt(id);
    m.points.insert(m.points.end(), {point.xyz.x(), point.xyz.y(), point.xyz.z()});
    m.tracks.push_back(static_cast<int32_t>(point.track.Length()));
    double point_sum = 0;
    size_t point_count = 0;
    for (const auto& e : point.track.Elements()) {
      m.tracks.push_back(static_cast<int32_t>(e.image_id - 1));
      m.tracks.push_back(static_cast<int32_t>(e.point2D_idx));
      const double error = reconstruction.ReprojectionError(id, e);
      if (error >= 0) {
        point_sum += error;
        point_count += 1;
      }
    }
    if (point_count > 0) {
      error_sum += point_sum / point_count;
      num_errors += 1;
    }
  }
  m.mean_reprojection_error = num_errors ? error_sum / num_errors : 0;
  return m;
}

struct Mapping {
  size_t num_cameras = 0;
  std::unique_ptr<edgesfm::IncrementalPipeline> pipeline;
  // Set once global mapping has positioned the images: then the only model.
  std::unique_ptr<edgesfm::Reconstruction> global_model;
};

// The global mapper's options from the pipeline's (seed, min_num_matches, bundle adjustment with
// its pose priors, filtering and triangulation thresholds).
edgesfm::GlobalMapperOptions GlobalOptions(const edgesfm::IncrementalPipelineOptions& o,
                                           int formulation) {
  edgesfm::GlobalMapperOptions options;
  options.positioning.seed = o.seed;
  options.positioning.formulation = formulation == 1
                                        ? edgesfm::PositioningFormulation::kEliminatedScale
                                        : edgesfm::PositioningFormulation::kExplicitScale;
  options.min_num_matches = o.min_num_matches;
  options.mapper = o.mapper;
  options.triangulation = o.triangulation;
  options.ba = o.ba;
  return options;
}

}  // namespace

// Cameras (input index i has camera id i + 1): model ids, sizes (w, h), params
// (concatenated), prior focal flags (may be null). Images (index i -> id i + 1): camera
// index, keypoint counts, keypoints (x, y concatenated, pixels). Pairs: image indices
// (i1, i2 per pair), match counts, matches (keypoint index pairs concatenated), type
// codes (kPairTypes order; may be null = calibrated). Returns null on invalid input
// (edgesfm_last_error names the rule: a zero focal length, NaN keypoints, a match index past
// its image's keypoints).
EDGESFM_EXPORT Mapping* edgesfm_mapping_create(
    int num_cameras, const int32_t* camera_models, const double* camera_sizes,
    const double* camera_params, const int32_t* camera_prior_focal, int num_images,
    const int32_t* image_cameras, const int32_t* image_num_points2D, const double* points2D,
    int num_pairs, const int32_t* pair_images, const int32_t* pair_num_matches,
    const int32_t* matches, const int32_t* pair_types, const double* options) {
  using edgesfm::bindings::Require;
  using edgesfm::bindings::RequireIndexPairs;
  return edgesfm::bindings::Guarded<Mapping*>(nullptr, [&] {
    Require(num_cameras >= 0 && num_images >= 0 && num_pairs >= 0, "mapping: negative counts");
    edgesfm::Reconstruction input;
    size_t param_offset = 0;
    for (int c = 0; c < num_cameras; ++c) {
      const auto model = static_cast<edgesfm::CameraModelId>(camera_models[c]);
      const int n = std::max(edgesfm::CameraModelNumParams(model), 0);
      edgesfm::bindings::RequireCamera(camera_models[c], camera_params + param_offset, n,
                                       camera_sizes[2 * c], camera_sizes[2 * c + 1],
                                       "mapping: camera " + std::to_string(c));
      edgesfm::Camera camera;
      camera.camera_id = c + 1;
      camera.model_id = model;
      camera.width = static_cast<int>(camera_sizes[2 * c]);
      camera.height = static_cast<int>(camera_sizes[2 * c + 1]);
      camera.params.assign(camera_params + param_offset, camera_params + param_offset + n);
      camera.has_prior_focal_length = camera_prior_focal != nullptr && camera_prior_focal[c] != 0;
      param_offset += n;
      input.AddCamera(camera);
    }
    size_t point_offset = 0;
    for (int i = 0; i < num_images; ++i) {
      const std::string image_name = "mapping: image " + std::to_string(i);
      Require(image_cameras[i] >= 0 && image_cameras[i] < num_cameras,
              image_name + ": camera index out of range");
      Require(image_num_points2D[i] >= 0, image_name + ": negative keypoint count");
      edgesfm::bindings::RequireFinite(points2D + 2 * point_offset,
                                       2 * static_cast<size_t>(image_num_points2D[i]),
                                       image_name + "'s keypoints");
      edgesfm::Image image;
      image.image_id = i + 1;
      image.camera_id = image_cameras[i] + 1;
      std::vector<Eigen::Vector2d> xys(image_num_points2D[i]);
      for (auto& xy : xys) {
        xy = Eigen::Vector2d(points2D[2 * point_offset], points2D[2 * point_offset + 1]);
        point_offset += 1;
      }
      image.SetPoints2D(xys);
      input.AddImage(image);
    }
    std::vector<edgesfm::ImagePairMatches> pairs(num_pairs);
    size_t match_offset = 0;
    for (int p = 0; p < num_pairs; ++p) {
      const int i1 = pair_images[2 * p], i2 = pair_images[2 * p + 1];
      const std::string pair_name = "mapping: pair " + std::to_string(p);
      Require(i1 >= 0 && i2 >= 0 && i1 < num_images && i2 < num_images && i1 != i2,
              pair_name + ": image indices out of range");
      Require(pair_num_matches[p] >= 0, pair_name + ": negative match count");
      RequireIndexPairs(matches + 2 * match_offset, pair_num_matches[p], image_num_points2D[i1],
                        image_num_points2D[i2], pair_name + "'s matches");
      pairs[p].image_id1 = i1 + 1;
      pairs[p].image_id2 = i2 + 1;
      if (pair_types != nullptr && pair_types[p] >= 0 && pair_types[p] < 9)
        pairs[p].type = kPairTypes[pair_types[p]];
      for (int k = 0; k < pair_num_matches[p]; ++k) {
        pairs[p].matches.emplace_back(matches[2 * match_offset], matches[2 * match_offset + 1]);
        match_offset += 1;
      }
    }
    const edgesfm::IncrementalPipelineOptions parsed = ParseOptions(options);
    auto mapping = std::make_unique<Mapping>();
    mapping->num_cameras = num_cameras;
    mapping->pipeline = std::make_unique<edgesfm::IncrementalPipeline>(
        parsed, input, edgesfm::BuildCorrespondenceGraph(input, pairs, parsed.min_num_matches));
    return mapping.release();
  });
}

// Pose priors (spec 4.12) of `num_priors` input images (indices as in create), 43 numbers each:
// the prior's cam_from_world rotation (w, x, y, z), its camera centre (x, y, z), and its 6x6
// covariance (row-major; rotation as the axis-angle of world_from_cam in the world frame, then
// the centre). Global bundle adjustments then align each model to them and keep them as soft
// constraints, so the models come out in their frame. Call before stepping. 0, or -1 on
// invalid input (edgesfm_last_error).
EDGESFM_EXPORT int edgesfm_mapping_set_pose_priors(Mapping* mapping, int num_priors,
                                                   const int32_t* image_indices,
                                                   const double* values) {
  using edgesfm::bindings::Require;
  return edgesfm::bindings::Guarded(-1, [&] {
    Require(num_priors >= 0, "pose priors: negative count");
    const int num_images = static_cast<int>(mapping->pipeline->Input().NumImages());
    auto priors = std::make_shared<edgesfm::ImagePosePriors>();
    for (int k = 0; k < num_priors; ++k) {
      const std::string name = "pose priors: prior " + std::to_string(k);
      Require(image_indices[k] >= 0 && image_indices[k] < num_images,
              name + ": image index out of range");
      const double* v = values + 43 * static_cast<size_t>(k);
      edgesfm::bindings::RequireFinite(v, 43, name);
      edgesfm::ImagePosePrior prior;
      prior.rotation = Eigen::Quaterniond(v[0], v[1], v[2], v[3]);
      Require(prior.rotation.norm() > 0.5, name + ": not a unit quaternion");
      prior.rotation.normalize();
      prior.centre = Eigen::Vector3d(v[4], v[5], v[6]);
      prior.sqrt_information = edgesfm::PoseSqrtInformation(
          Eigen::Map<const Eigen::Matrix<double, 6, 6, Eigen::RowMajor>>(v + 7));
      (*priors)[static_cast<edgesfm::image_t>(image_indices[k]) + 1] = prior;
    }
    mapping->pipeline->SetPosePriors(std::move(priors));
    return 0;
  });
}

// Global mapping, first part: places the images of the largest connected part of the graph
// among the `num_rotations` input images (indices) with cam_from_world rotations `rotations`
// (w, x, y, z each), by global positioning (formulation 0: explicit scale, 1: eliminated
// scale). Writes the summary (int32[6]: images with a rotation, in the component, positioned,
// tracks, observations, inlier observations). The placed images and points are then the
// mapping's only model (edgesfm_mapping_result). 0, or -1 on invalid input (edgesfm_last_error).
EDGESFM_EXPORT int edgesfm_mapping_global_position(Mapping* mapping, int num_rotations,
                                                   const int32_t* image_indices,
                                                   const double* rotations, int formulation,
                                                   int32_t* summary_out) {
  using edgesfm::bindings::Require;
  return edgesfm::bindings::Guarded(-1, [&] {
    const edgesfm::Reconstruction& input = mapping->pipeline->Input();
    Require(num_rotations >= 0, "global mapping: negative rotation count");
    std::unordered_map<image_t, Eigen::Quaterniond> by_image;
    for (int k = 0; k < num_rotations; ++k) {
      const std::string name = "global mapping: rotation " + std::to_string(k);
      Require(image_indices[k] >= 0 && image_indices[k] < static_cast<int>(input.NumImages()),
              name + ": image index out of range");
      edgesfm::bindings::RequireFinite(rotations + 4 * k, 4, name);
      Eigen::Quaterniond q(rotations[4 * k], rotations[4 * k + 1], rotations[4 * k + 2],
                           rotations[4 * k + 3]);
      Require(q.norm() > 0.5, name + ": not a unit quaternion");
      by_image[static_cast<image_t>(image_indices[k]) + 1] = q.normalized();
    }
    edgesfm::GlobalPositioningSummary summary;
    mapping->global_model = std::make_unique<edgesfm::Reconstruction>(
        edgesfm::PositionImages(GlobalOptions(mapping->pipeline->Options(), formulation), input,
                                mapping->pipeline->Graph(), by_image, &summary));
    const size_t values[6] = {summary.num_images_with_rotation, summary.num_images_in_component,
                              summary.num_images_positioned,    summary.num_tracks,
                              summary.num_observations,         summary.num_inlier_observations};
    for (int i = 0; i < 6; ++i) summary_out[i] = static_cast<int32_t>(values[i]);
    return 0;
  });
}

// Global mapping, second part: bundle adjustment, triangulation and refinement of the placed
// model (sfm/global_mapper.h RefineGlobalModel). 0, or -1 before edgesfm_mapping_global_position.
EDGESFM_EXPORT int edgesfm_mapping_global_refine(Mapping* mapping, int formulation) {
  return edgesfm::bindings::Guarded(-1, [&] {
    edgesfm::bindings::Require(mapping->global_model != nullptr,
                               "global mapping: refine before position");
    edgesfm::RefineGlobalModel(GlobalOptions(mapping->pipeline->Options(), formulation),
                               mapping->pipeline->Input(), mapping->pipeline->Graph(),
                               mapping->global_model.get());
    return 0;
  });
}

// Continues mapping from a model (sfm/incremental_pipeline.h ExtendModel) instead of an
// initial pair; before the first step. Camera params: every input camera's, concatenated in
// the input layout. Images: `num_images` input indices with their poses (qw qx qy qz tx ty tz
// each, cam_from_world). Points: xyz each, and per point its track length then (image index,
// keypoint index) pairs (the layout edgesfm_mapping_result gives). Returns the number of
// track elements left out, or -1 on invalid input (edgesfm_last_error).
EDGESFM_EXPORT int edgesfm_mapping_extend(Mapping* mapping, const double* camera_params,
                                          int num_images, const int32_t* image_indices,
                                          const double* poses, int num_points, const double* points,
                                          int tracks_length, const int32_t* tracks) {
  using edgesfm::bindings::Require;
  return edgesfm::bindings::Guarded(-1, [&] {
    const edgesfm::Reconstruction& input = mapping->pipeline->Input();
    Require(num_images >= 0 && num_points >= 0 && tracks_length >= 0,
            "extend model: negative counts");
    edgesfm::SeedModel seed;
    size_t offset = 0;
    for (size_t c = 0; c < mapping->num_cameras; ++c) {
      const edgesfm::camera_t id = static_cast<edgesfm::camera_t>(c + 1);
      const size_t n = input.CameraAt(id).params.size();
      edgesfm::bindings::RequireFinite(camera_params + offset, n,
                                       "extend model: camera " + std::to_string(c));
      seed.camera_params[id].assign(camera_params + offset, camera_params + offset + n);
      offset += n;
    }
    for (int k = 0; k < num_images; ++k) {
      const std::string name = "extend model: image " + std::to_string(k);
      Require(image_indices[k] >= 0 && image_indices[k] < static_cast<int>(input.NumImages()),
              name + ": image index out of range");
      const double* p = poses + 7 * static_cast<size_t>(k);
      edgesfm::bindings::RequireFinite(p, 7, name + "'s pose");
      Eigen::Quaterniond q(p[0], p[1], p[2], p[3]);
      Require(q.norm() > 0.5, name + ": not a unit quaternion");
      seed.images.emplace_back(static_cast<image_t>(image_indices[k]) + 1,
                               edgesfm::Rigid3d(q.normalized(), Eigen::Vector3d(p[4], p[5], p[6])));
    }
    edgesfm::bindings::RequireFinite(points, 3 * static_cast<size_t>(num_points),
                                     "extend model: points");
    size_t t = 0;
    for (int k = 0; k < num_points; ++k) {
      const std::string name = "extend model: point " + std::to_string(k);
      Require(t < static_cast<size_t>(tracks_length), name + ": tracks end early");
      const int length = tracks[t++];
      Require(
          length >= 0 && t + 2 * static_cast<size_t>(length) <= static_cast<size_t>(tracks_length),
          name + ": track length out of range");
      std::vector<edgesfm::TrackElement> elements;
      for (int e = 0; e < length; ++e, t += 2) {
        Require(
            tracks[t] >= 0 && tracks[t] < static_cast<int>(input.NumImages()) && tracks[t + 1] >= 0,
            name + ": track element out of range");
        elements.emplace_back(static_cast<image_t>(tracks[t]) + 1,
                              static_cast<edgesfm::point2D_t>(tracks[t + 1]));
      }
      seed.points.emplace_back(Eigen::Vector3d(points[3 * k], points[3 * k + 1], points[3 * k + 2]),
                               std::move(elements));
    }
    return static_cast<int>(mapping->pipeline->ExtendModel(seed));
  });
}

// Runs up to `max_steps` steps, stopping early after a step that makes a snapshot due.
// Returns 0 when mapping is done, 1 when more work remains, 2 when a snapshot is due
// (more work may remain).
// -1 on failure (edgesfm_last_error).
EDGESFM_EXPORT int edgesfm_mapping_step(Mapping* mapping, int max_steps) {
  return edgesfm::bindings::Guarded(-1, [&] {
    for (int i = 0; i < max_steps; ++i) {
      const bool more = mapping->pipeline->Step();
      if (mapping->pipeline->SnapshotDue()) return 2;
      if (!more) return 0;
    }
    return mapping->pipeline->Done() ? 0 : 1;
  });
}

EDGESFM_EXPORT int edgesfm_mapping_num_registrations(const Mapping* mapping) {
  return static_cast<int>(mapping->pipeline->NumRegistrations());
}

// Writes the pipeline's phase (0 start a model, 1 grow it, 2 finish it, 3 done: the next
// step's work), the distinct images held by any model and the images that can register.
EDGESFM_EXPORT void edgesfm_mapping_progress(const Mapping* mapping, int* out) {
  out[0] = static_cast<int>(mapping->pipeline->phase());
  out[1] = static_cast<int>(mapping->pipeline->NumImagesHeld());
  out[2] = static_cast<int>(mapping->pipeline->NumImagesReachable());
}

// Ends the run early (time budget): the next steps finish the current model, no other starts.
EDGESFM_EXPORT void edgesfm_mapping_request_finish(Mapping* mapping) {
  mapping->pipeline->RequestFinish();
}

// The finished models and the one in progress, flattened.
EDGESFM_EXPORT MappingResult* edgesfm_mapping_result(const Mapping* mapping) {
  return edgesfm::bindings::Guarded<MappingResult*>(nullptr, [&] {
    auto result = std::make_unique<MappingResult>();
    if (mapping->global_model) {
      result->models.push_back(Flatten(*mapping->global_model, mapping->num_cameras));
      return result.release();
    }
    for (const edgesfm::Reconstruction* model : mapping->pipeline->Models()) {
      result->models.push_back(Flatten(*model, mapping->num_cameras));
    }
    return result.release();
  });
}

EDGESFM_EXPORT int edgesfm_mapping_result_num_models(const MappingResult* r) {
  return static_cast<int>(r->models.size());
}
// counts (int32[4]): registered images, points, track array length, camera params length.
EDGESFM_EXPORT void edgesfm_mapping_result_counts(const MappingResult* r, int model,
                                                  int32_t* counts) {
  const MappingModel& m = r->models[model];
  counts[0] = static_cast<int32_t>(m.image_indices.size());
  counts[1] = static_cast<int32_t>(m.points.size() / 3);
  counts[2] = static_cast<int32_t>(m.tracks.size());
  counts[3] = static_cast<int32_t>(m.camera_params.size());
}
EDGESFM_EXPORT const double* edgesfm_mapping_result_camera_params(const MappingResult* r,
                                                                  int model) {
  return r->models[model].camera_params.data();
}
EDGESFM_EXPORT const int32_t* edgesfm_mapping_result_image_indices(const MappingResult* r,
                                                                   int model) {
  return r->models[model].image_indices.data();
}
EDGESFM_EXPORT const double* edgesfm_mapping_result_poses(const MappingResult* r, int model) {
  return r->models[model].poses.data();
}
EDGESFM_EXPORT const double* edgesfm_mapping_result_points(const MappingResult* r, int model) {
  return r->models[model].points.data();
}
EDGESFM_EXPORT const int32_t* edgesfm_mapping_result_tracks(const MappingResult* r, int model) {
  return r->models[model].tracks.data();
}
EDGESFM_EXPORT double edgesfm_mapping_result_mean_reprojection_error(const MappingResult* r,
                                                                     int model) {
  return r->models[model].mean_reprojection_error;
}
EDGESFM_EXPORT void edgesfm_mapping_result_free(MappingResult* r) { delete r; }

// Checkpoint bytes of the pipeline's state (sfm/mapping_checkpoint.h).
EDGESFM_EXPORT Bytes* edgesfm_mapping_checkpoint(const Mapping* mapping) {
  return edgesfm::bindings::Guarded<Bytes*>(nullptr, [&] {
    return new Bytes{edgesfm::SerializeMappingCheckpoint(mapping->pipeline->SaveState())};
  });
}
EDGESFM_EXPORT const uint8_t* edgesfm_mapping_bytes_data(const Bytes* b) { return b->data.data(); }
EDGESFM_EXPORT int edgesfm_mapping_bytes_size(const Bytes* b) {
  return static_cast<int>(b->data.size());
}
EDGESFM_EXPORT void edgesfm_mapping_bytes_free(Bytes* b) { delete b; }

// Restores a checkpoint into a pipeline created from the same input; 0 on success, -1
// if the bytes are not a checkpoint that fits.
EDGESFM_EXPORT int edgesfm_mapping_restore(Mapping* mapping, const uint8_t* bytes, int size) {
  return edgesfm::bindings::Guarded(-2, [&] {
    edgesfm::IncrementalPipeline::State state;
    if (!edgesfm::DeserializeMappingCheckpoint(std::vector<uint8_t>(bytes, bytes + size),
                                               mapping->pipeline->Input(), &state)) {
      return -1;
    }
    mapping->pipeline->RestoreState(std::move(state));
    return 0;
  });
}

EDGESFM_EXPORT void edgesfm_mapping_free(Mapping* mapping) { delete mapping; }
