#include "sfm/mapping_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

namespace edgesfm {
namespace {

constexpr char kMagic[] = "EDGESFM-MAPCKPT";
constexpr uint32_t kVersion = 4;

class Writer {
 public:
  template <typename T>
  void Put(T value) {
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &value, sizeof(T));
  }
  void PutRaw(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + size);
  }
  std::vector<uint8_t> Take() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

// Reads without exceptions (the wasm build has none): past the end it returns zeros
// and remembers the failure.
class Reader {
 public:
  explicit Reader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  template <typename T>
  T Get() {
    T value{};
    GetRaw(&value, sizeof(T));
    return value;
  }
  void GetRaw(void* data, size_t size) {
    if (!ok_ || pos_ + size > bytes_.size()) {
      ok_ = false;
      std::memset(data, 0, size);
      return;
    }
    std::memcpy(data, bytes_.data() + pos_, size);
    pos_ += size;
  }
  void Fail() { ok_ = false; }
  bool ok() const { return ok_; }
  bool AtEnd() const { return pos_ == bytes_.size(); }

 private:
  const std::vector<uint8_t>& bytes_;
  size_t pos_ = 0;
  bool ok_ = true;
};

void PutCounts(Writer* w, const std::unordered_map<image_t, int>& counts) {
  std::vector<std::pair<image_t, int>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end());
  w->Put<uint32_t>(sorted.size());
  for (const auto& [id, n] : sorted) {
    w->Put<uint32_t>(id);
    w->Put<int32_t>(n);
  }
}

std::unordered_map<image_t, int> GetCounts(Reader* r) {
  std::unordered_map<image_t, int> counts;
  const uint32_t n = r->Get<uint32_t>();
  for (uint32_t i = 0; i < n && r->ok(); ++i) {
    const image_t id = r->Get<uint32_t>();
    counts[id] = r->Get<int32_t>();
  }
  return counts;
}

void PutReconstruction(Writer* w, const Reconstruction& reconstruction) {
  std::vector<camera_t> camera_ids;
  for (const auto& entry : reconstruction.Cameras()) camera_ids.push_back(entry.first);
  std::sort(camera_ids.begin(), camera_ids.end());
  w->Put<uint32_t>(camera_ids.size());
  for (camera_t id : camera_ids) {
    const Camera& camera = reconstruction.CameraAt(id);
    w->Put<uint32_t>(id);
    w->Put<uint32_t>(camera.params.size());
    w->PutRaw(camera.params.data(), camera.params.size() * sizeof(double));
  }
  w->Put<uint32_t>(reconstruction.RegImageIds().size());
  for (image_t id : reconstruction.RegImageIds()) {
    const Rigid3d& pose = reconstruction.ImageAt(id).cam_from_world;
    w->Put<uint32_t>(id);
    w->PutRaw(pose.rotation.coeffs().data(), 4 * sizeof(double));
    w->PutRaw(pose.translation.data(), 3 * sizeof(double));
  }
  std::vector<point3D_t> point_ids;
  for (const auto& entry : reconstruction.Points3D()) point_ids.push_back(entry.first);
  std::sort(point_ids.begin(), point_ids.end());
  w->Put<uint64_t>(reconstruction.MaxPoint3DId());
  w->Put<uint64_t>(point_ids.size());
  for (point3D_t id : point_ids) {
    const Point3D& point = reconstruction.Point3DAt(id);
    w->Put<uint64_t>(id);
    w->PutRaw(point.xyz.data(), 3 * sizeof(double));
    w->Put<uint32_t>(point.track.Length());
    for (const TrackElement& e : point.track.Elements()) {
      w->Put<uint32_t>(e.image_id);
      w->Put<uint32_t>(e.point2D_idx);
    }
  }
}

Reconstruction GetReconstruction(Reader* r, const Reconstruction& input) {
  Reconstruction reconstruction = input;
  const uint32_t num_cameras = r->Get<uint32_t>();
  for (uint32_t c = 0; c < num_cameras && r->ok(); ++c) {
    const camera_t camera_id = r->Get<uint32_t>();
    const uint32_t n = r->Get<uint32_t>();
    if (!reconstruction.ExistsCamera(camera_id) ||
        n != reconstruction.CameraAt(camera_id).params.size()) {
      r->Fail();
      break;
    }
    r->GetRaw(reconstruction.CameraAt(camera_id).params.data(), n * sizeof(double));
  }
  const uint32_t num_reg = r->ok() ? r->Get<uint32_t>() : 0;
  for (uint32_t i = 0; i < num_reg && r->ok(); ++i) {
    const image_t image_id = r->Get<uint32_t>();
    if (!reconstruction.ExistsImage(image_id) || reconstruction.IsImageRegistered(image_id)) {
      r->Fail();
      break;
    }
    Image& image = reconstruction.ImageAt(image_id);
    r->GetRaw(image.cam_from_world.rotation.coeffs().data(), 4 * sizeof(double));
    r->GetRaw(image.cam_from_world.translation.data(), 3 * sizeof(double));
    reconstruction.RegisterImage(image.image_id);
  }
  const point3D_t max_point3D_id = r->ok() ? r->Get<uint64_t>() : 0;
  const uint64_t num_points = r->ok() ? r->Get<uint64_t>() : 0;
  for (uint64_t p = 0; p < num_points && r->ok(); ++p) {
    const point3D_t point3D_id = r->Get<uint64_t>();
    if (point3D_id == kInvalidPoint3DId || point3D_id > max_point3D_id ||
        reconstruction.ExistsPoint3D(point3D_id)) {
      r->Fail();
      break;
    }
    Eigen::Vector3d xyz;
    r->GetRaw(xyz.data(), 3 * sizeof(double));
    Track track;
    const uint32_t length = r->Get<uint32_t>();
    for (uint32_t k = 0; k < length && r->ok(); ++k) {
      const image_t image_id = r->Get<uint32_t>();
      const point2D_t idx = r->Get<uint32_t>();
      // The keypoint must exist and not yet belong to a point.
      if (!reconstruction.ExistsImage(image_id) ||
          idx >= reconstruction.ImageAt(image_id).NumPoints2D() ||
          reconstruction.ImageAt(image_id).Point2DAt(idx).HasPoint3D()) {
        r->Fail();
        break;
      }
      track.AddElement(image_id, idx);
    }
    if (r->ok()) reconstruction.AddPoint3DWithId(point3D_id, xyz, track);
  }
  reconstruction.RaiseMaxPoint3DId(max_point3D_id);
  return reconstruction;
}

}  // namespace

std::vector<uint8_t> SerializeMappingCheckpoint(const IncrementalPipeline::State& state) {
  Writer w;
  w.PutRaw(kMagic, sizeof(kMagic));
  w.Put<uint32_t>(kVersion);
  w.Put<int32_t>(static_cast<int32_t>(state.phase));
  w.Put<uint64_t>(state.num_registrations_total);
  w.Put<uint64_t>(state.num_reg_images_at_global_ba);
  w.Put<uint64_t>(state.num_points_at_global_ba);
  w.Put<int32_t>(state.num_models_started);
  w.Put<uint8_t>(state.refined_without_registration ? 1 : 0);
  w.Put<uint64_t>(state.num_reg_images_at_retry);
  PutCounts(&w, state.num_reg_trials);
  w.Put<uint32_t>(state.re_num_trials.size());
  for (const auto& [pair_id, n] :
       std::map<image_pair_t, int>(state.re_num_trials.begin(), state.re_num_trials.end())) {
    w.Put<uint64_t>(pair_id);
    w.Put<int32_t>(n);
  }
  PutCounts(&w, state.init_num_reg_trials);
  PutCounts(&w, state.num_registrations);
  for (const auto* pairs : {&state.tried_init_pairs, &state.model_init_pairs}) {
    w.Put<uint32_t>(pairs->size());
    for (const auto& [a, b] : *pairs) {
      w.Put<uint32_t>(a);
      w.Put<uint32_t>(b);
    }
  }
  w.Put<uint32_t>(state.models.size());
  for (const Reconstruction& model : state.models) PutReconstruction(&w, model);
  w.Put<uint8_t>(state.has_current ? 1 : 0);
  if (state.has_current) PutReconstruction(&w, state.current);
  return w.Take();
}

bool DeserializeMappingCheckpoint(const std::vector<uint8_t>& bytes, const Reconstruction& input,
                                  IncrementalPipeline::State* state) {
  {
    Reader r(bytes);
    char magic[sizeof(kMagic)];
    r.GetRaw(magic, sizeof(magic));
    if (!r.ok() || std::memcmp(magic, kMagic, sizeof(kMagic)) != 0 || r.Get<uint32_t>() != kVersion)
      return false;
    IncrementalPipeline::State s;
    const int32_t phase = r.Get<int32_t>();
    if (phase < 0 || phase > static_cast<int32_t>(IncrementalPipeline::Phase::kDone)) return false;
    s.phase = static_cast<IncrementalPipeline::Phase>(phase);
    s.num_registrations_total = r.Get<uint64_t>();
    s.num_reg_images_at_global_ba = r.Get<uint64_t>();
    s.num_points_at_global_ba = r.Get<uint64_t>();
    s.num_models_started = r.Get<int32_t>();
    s.refined_without_registration = r.Get<uint8_t>() != 0;
    s.num_reg_images_at_retry = r.Get<uint64_t>();
    s.num_reg_trials = GetCounts(&r);
    const uint32_t num_re_trials = r.Get<uint32_t>();
    for (uint32_t i = 0; i < num_re_trials && r.ok(); ++i) {
      const image_pair_t pair_id = r.Get<uint64_t>();
      s.re_num_trials[pair_id] = r.Get<int32_t>();
    }
    s.init_num_reg_trials = GetCounts(&r);
    s.num_registrations = GetCounts(&r);
    for (auto* pairs : {&s.tried_init_pairs, &s.model_init_pairs}) {
      const uint32_t num_pairs = r.Get<uint32_t>();
      for (uint32_t i = 0; i < num_pairs && r.ok(); ++i) {
        const image_t a = r.Get<uint32_t>();
        pairs->insert({a, r.Get<uint32_t>()});
      }
    }
    const uint32_t num_models = r.Get<uint32_t>();
    for (uint32_t m = 0; m < num_models && r.ok(); ++m) {
      s.models.push_back(GetReconstruction(&r, input));
      s.models.back().UpdatePoint3DErrors();
    }
    s.has_current = r.Get<uint8_t>() != 0;
    if (s.has_current) s.current = GetReconstruction(&r, input);
    if (!r.ok() || !r.AtEnd()) return false;
    *state = std::move(s);
    return true;
  }
}

}  // namespace edgesfm
