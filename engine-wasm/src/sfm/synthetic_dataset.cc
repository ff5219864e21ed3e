#include "sfm/synthetic_dataset.h"

#include <algorithm>
#include <map>
#include <random>

namespace edgesfm {

SyntheticDataset SynthesizeDataset(const SyntheticDatasetOptions& options) {
  std::mt19937 rng(options.seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::normal_distribution<double> noise(0, options.point2D_noise_px);
  SyntheticDataset data;
  for (int c = 0; c < options.num_cameras; ++c) {
    Camera camera = Camera::CreateFromModelId(c + 1, CameraModelId::kSimpleRadial,
                                              options.focal_length, options.width, options.height);
    camera.params[3] = options.radial_distortion;
    data.truth.AddCamera(camera);
    data.input.AddCamera(camera);
  }
  const bool street = options.trajectory == SyntheticTrajectory::kStreet;
  // The street: facades from behind the first camera to well beyond the last.
  const double street_length =
      options.street_step * options.num_images + 4 * options.street_half_width;
  std::vector<Eigen::Vector3d> points(options.num_points3D);
  for (auto& p : points) {
    p = Eigen::Vector3d(uniform(rng), uniform(rng), uniform(rng));
    if (street) {
      p = Eigen::Vector3d((p.x() < 0 ? -1 : 1) * options.street_half_width * (1 + 0.05 * p.y()),
                          0.5 * options.street_half_width * p.z(),
                          0.5 * street_length * (1 + uniform(rng)));
    }
  }

  // keypoints[image][k] = (xy, point index or -1)
  std::vector<std::vector<std::pair<Eigen::Vector2d, int>>> keypoints(options.num_images);
  std::vector<Rigid3d> poses(options.num_images);
  for (int i = 0; i < options.num_images; ++i) {
    const double angle = options.arc_step * (i - 0.5 * (options.num_images - 1));
    Eigen::Vector3d center(options.camera_distance * std::sin(angle),
                           options.center_jitter * uniform(rng),
                           -options.camera_distance * std::cos(angle));
    Eigen::Vector3d z =
        (Eigen::Vector3d(0.1 * uniform(rng), 0.1 * uniform(rng), 0) - center).normalized();
    if (street) {
      center = Eigen::Vector3d(0.05 * uniform(rng), options.center_jitter * uniform(rng),
                               options.street_step * i);
      z = Eigen::Vector3d(0.05 * uniform(rng), 0.05 * uniform(rng), 1).normalized();
    }
    const Eigen::Vector3d x = Eigen::Vector3d::UnitY().cross(z).normalized();
    const Eigen::Vector3d y = z.cross(x);
    Eigen::Matrix3d r;
    r << x.transpose(), y.transpose(), z.transpose();
    poses[i] = Rigid3d(r, -r * center);
    const Camera& camera = data.truth.CameraAt(i % options.num_cameras + 1);
    for (int j = 0; j < options.num_points3D; ++j) {
      Eigen::Vector2d xy;
      if (!camera.ImgFromCam(poses[i] * points[j], &xy)) continue;
      xy += Eigen::Vector2d(noise(rng), noise(rng));
      if (xy.x() < 0 || xy.y() < 0 || xy.x() >= options.width || xy.y() >= options.height) continue;
      keypoints[i].emplace_back(xy, j);
    }
    const int num_distractors = static_cast<int>(options.distractor_ratio * keypoints[i].size());
    std::uniform_real_distribution<double> ux(0, options.width), uy(0, options.height);
    for (int d = 0; d < num_distractors; ++d)
      keypoints[i].emplace_back(Eigen::Vector2d(ux(rng), uy(rng)), -1);
    std::shuffle(keypoints[i].begin(), keypoints[i].end(), rng);
  }

  for (int i = 0; i < options.num_images; ++i) {
    Image image;
    image.image_id = i + 1;
    image.name = "image" + std::to_string(i + 1) + ".jpg";
    image.camera_id = i % options.num_cameras + 1;
    std::vector<Eigen::Vector2d> xys;
    for (const auto& kp : keypoints[i]) xys.push_back(kp.first);
    image.SetPoints2D(xys);
    data.input.AddImage(image);
    image.cam_from_world = poses[i];
    data.truth.AddImage(image);
    data.correspondence_graph.AddImage(image.image_id, xys.size());
  }

  // Tracks of the truth, and true matches between every pair of images.
  std::vector<Track> tracks(options.num_points3D);
  for (int i = 0; i < options.num_images; ++i) {
    for (size_t k = 0; k < keypoints[i].size(); ++k) {
      if (keypoints[i][k].second >= 0) tracks[keypoints[i][k].second].AddElement(i + 1, k);
    }
  }
  for (int i = 0; i < options.num_images; ++i) data.truth.RegisterImage(i + 1);
  for (int j = 0; j < options.num_points3D; ++j) {
    if (tracks[j].Length() >= 2) data.truth.AddPoint3D(points[j], tracks[j]);
  }
  for (int i1 = 0; i1 < options.num_images; ++i1) {
    std::map<int, point2D_t> index1;
    for (size_t k = 0; k < keypoints[i1].size(); ++k) {
      if (keypoints[i1][k].second >= 0) index1[keypoints[i1][k].second] = k;
    }
    for (int i2 = i1 + 1; i2 < options.num_images; ++i2) {
      CorrespondenceGraph::Matches matches;
      for (size_t k = 0; k < keypoints[i2].size(); ++k) {
        const auto it = index1.find(keypoints[i2][k].second);
        if (it != index1.end()) matches.emplace_back(it->second, k);
      }
      const size_t num_outliers = static_cast<size_t>(options.outlier_match_ratio * matches.size());
      std::uniform_int_distribution<size_t> pick1(0, keypoints[i1].size() - 1),
          pick2(0, keypoints[i2].size() - 1);
      for (size_t o = 0; o < num_outliers; ++o) matches.emplace_back(pick1(rng), pick2(rng));
      if (!matches.empty()) data.correspondence_graph.AddCorrespondences(i1 + 1, i2 + 1, matches);
    }
  }
  data.correspondence_graph.Finalize();
  return data;
}

}  // namespace edgesfm
