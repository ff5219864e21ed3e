#include "sfm/bundle_adjustment_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "scene/cubemap.h"
#include "sfm/synthetic_dataset.h"

namespace edgesfm {
namespace {

// Perturbs every pose but the first two (which hold the gauge), every point and the
// focal length.
void Perturb(Reconstruction* reconstruction, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  for (size_t i = 2; i < reconstruction->RegImageIds().size(); ++i) {
    const image_t image_id = reconstruction->RegImageIds()[i];
    Rigid3d& pose = reconstruction->ImageAt(image_id).cam_from_world;
    pose.rotation =
        Eigen::Quaterniond(Eigen::AngleAxisd(
            0.01, Eigen::Vector3d(normal(rng), normal(rng), normal(rng)).normalized())) *
        pose.rotation;
    pose.translation += 0.02 * Eigen::Vector3d(normal(rng), normal(rng), normal(rng));
  }
  for (const point3D_t id : reconstruction->Point3DIds()) {
    reconstruction->Point3DAt(id).xyz +=
        0.02 * Eigen::Vector3d(normal(rng), normal(rng), normal(rng));
  }
  if (!reconstruction->CameraAt(1).params.empty()) reconstruction->CameraAt(1).params[0] *= 1.02;
}

// Every registered image adjusted, the gauge held by the first two.
BundleAdjustmentConfig EveryImageWithGauge(const Reconstruction& reconstruction) {
  BundleAdjustmentConfig config;
  for (image_t id : reconstruction.RegImageIds()) config.image_ids.insert(id);
  config.FixGauge(reconstruction, reconstruction.RegImageIds()[0], reconstruction.RegImageIds()[1]);
  return config;
}

// Every image of `start` adjusted (EveryImageWithGauge): the largest |log (focal / truth's)|.
double WorstFocalErrorAfterAdjustment(const ReconstructionBundleAdjustmentOptions& ba,
                                      Reconstruction reconstruction, const Reconstruction& truth) {
  AdjustReconstruction(ba, EveryImageWithGauge(reconstruction), &reconstruction);
  double worst = 0;
  for (const auto& [id, camera] : reconstruction.Cameras())
    worst = std::max(worst, std::abs(std::log(camera.params[0] / truth.CameraAt(id).params[0])));
  return worst;
}

double MaxCenterError(const Reconstruction& a, const Reconstruction& b) {
  double e = 0;
  for (image_t id : a.RegImageIds())
    e = std::max(e, (a.ImageAt(id).ProjectionCenter() - b.ImageAt(id).ProjectionCenter()).norm());
  return e;
}

TEST(BundleAdjustmentConfig, GlobalAdjustmentWithGaugeRecoversTruth) {
  SyntheticDatasetOptions options;
  options.point2D_noise_px = 0.2;
  SyntheticDataset data = SynthesizeDataset(options);
  Reconstruction reconstruction = data.truth;
  Perturb(&reconstruction, 3);
  const BundleAdjustmentConfig config = EveryImageWithGauge(reconstruction);
  const BundleAdjustmentSummary summary = AdjustReconstruction({}, config, &reconstruction);
  EXPECT_TRUE(summary.converged);
  reconstruction.UpdatePoint3DErrors();
  EXPECT_LT(reconstruction.ComputeMeanReprojectionError(), 0.4);
  EXPECT_LT(MaxCenterError(reconstruction, data.truth), 0.03);
  EXPECT_NEAR(reconstruction.CameraAt(1).params[0], 700, 3);
}

TEST(BundleAdjustmentConfig, LocalAdjustmentHoldsImagesOutsideTheConfig) {
  SyntheticDataset data = SynthesizeDataset(SyntheticDatasetOptions());
  Reconstruction reconstruction = data.truth;
  Perturb(&reconstruction, 4);
  const std::vector<image_t> ids = reconstruction.RegImageIds();
  BundleAdjustmentConfig config;
  config.image_ids = {ids[5], ids[6], ids[7]};
  for (image_t id : config.image_ids) {
    for (const Point2D& p : reconstruction.ImageAt(id).Points2D()) {
      if (p.HasPoint3D()) config.variable_point_ids.insert(p.point3D_id);
    }
  }
  config.constant_camera_ids.insert(1);
  const Rigid3d held = reconstruction.ImageAt(ids[2]).cam_from_world;
  const double focal = reconstruction.CameraAt(1).params[0];
  AdjustReconstruction({}, config, &reconstruction);
  EXPECT_TRUE(reconstruction.ImageAt(ids[2]).cam_from_world.translation.isApprox(held.translation));
  EXPECT_EQ(reconstruction.CameraAt(1).params[0], focal);
}

TEST(BundleAdjustmentConfig, TwoStageDeletesOutlierObservations) {
  SyntheticDataset data = SynthesizeDataset(SyntheticDatasetOptions());
  Reconstruction reconstruction = data.truth;
  // Corrupt one observation by moving the point's keypoint far away.
  const point3D_t victim = *reconstruction.Point3DIds().begin();
  const TrackElement element = reconstruction.Point3DAt(victim).track.Element(0);
  std::vector<Point2D> points2D = reconstruction.ImageAt(element.image_id).Points2D();
  const size_t before = reconstruction.ComputeNumObservations();
  Image& image = reconstruction.ImageAt(element.image_id);
  // Shift the keypoint; SetPoints2D unlinks 3D points, so relink them.
  points2D[element.point2D_idx].xy += Eigen::Vector2d(60, -40);
  image.SetPoints2D(points2D);
  for (point2D_t k = 0; k < points2D.size(); ++k) {
    if (points2D[k].HasPoint3D()) image.SetPoint3DForPoint2D(k, points2D[k].point3D_id);
  }
  const BundleAdjustmentConfig config = EveryImageWithGauge(reconstruction);
  ReconstructionBundleAdjustmentOptions options;
  options.two_stage = true;
  AdjustReconstruction(options, config, &reconstruction);
  EXPECT_FALSE(
      reconstruction.ImageAt(element.image_id).Point2DAt(element.point2D_idx).HasPoint3D());
  EXPECT_EQ(reconstruction.ComputeNumObservations(),
            before - 1 - (reconstruction.ExistsPoint3D(victim) ? 0 : 1));
}

TEST(BundleAdjustmentConfig, FocalGroupsArePerImageCamerasWithoutPriorOfOneSize) {
  SyntheticDatasetOptions options;
  options.num_cameras = options.num_images = 8;
  Reconstruction reconstruction = SynthesizeDataset(options).truth;
  const double focals[] = {600, 650, 700, 750, 900, 1000, 500, 800};
  for (camera_t c = 1; c <= 8; ++c) reconstruction.CameraAt(c).params[0] = focals[c - 1];
  // Camera 6 is shared by images 6 and 7 (camera 7 then has none), camera 8 has a prior.
  reconstruction.ImageAt(7).camera_id = 6;
  reconstruction.CameraAt(8).has_prior_focal_length = true;
  ReconstructionBundleAdjustmentOptions ba;
  FocalGroups groups = FocalGroupsOf(ba, reconstruction);
  ASSERT_EQ(groups.members.size(), 5u);
  for (camera_t c = 1; c <= 5; ++c) EXPECT_NEAR(groups.LogMedianFocal(c), std::log(700), 1e-12);
  // The median is over the registered images' cameras; an unregistered one still gets a prior.
  reconstruction.DeRegisterImage(5);
  groups = FocalGroupsOf(ba, reconstruction);
  ASSERT_EQ(groups.members.size(), 5u);
  EXPECT_NEAR(groups.LogMedianFocal(5), 0.5 * (std::log(650) + std::log(700)), 1e-12);
  // Another size is another group, below the minimum size here.
  reconstruction.CameraAt(1).width = 1024;
  groups = FocalGroupsOf(ba, reconstruction);
  EXPECT_EQ(groups.members.count(1), 0u);
  EXPECT_NEAR(groups.LogMedianFocal(2), std::log(700), 1e-12);
  ba.focal_group_min_size = 4;
  EXPECT_TRUE(FocalGroupsOf(ba, reconstruction).members.empty());
  ba.focal_group_min_size = 3;
  ba.focal_group_sigma = 0;
  EXPECT_TRUE(FocalGroupsOf(ba, reconstruction).members.empty());
}

// Photos found online are resized and turned: a size group holds one size in either orientation;
// a camera whose size group is too small takes its aspect group's median ratio of focal length to
// larger side, aspect ratios within rounding of each other being one.
TEST(BundleAdjustmentConfig, FocalGroupsReachResizedAndTurnedPhotosByAspectRatio) {
  SyntheticDatasetOptions options;
  options.num_cameras = options.num_images = 8;
  Reconstruction reconstruction = SynthesizeDataset(options).truth;
  const auto set = [&](camera_t c, int width, int height, double focal) {
    Camera& camera = reconstruction.CameraAt(c);
    camera.width = width;
    camera.height = height;
    camera.params[0] = focal;
  };
  set(1, 800, 600, 640);
  set(2, 600, 800, 700);  // turned
  set(3, 800, 600, 760);
  // Resized to 0.4 x, its aspect ratio rounded to 1.3355: 0.9 x the larger side; then turned:
  // 0.825 x.
  set(4, 410, 307, 369);
  set(5, 307, 410, 338.25);
  set(6, 1024, 600, 800);  // another aspect ratio, alone
  set(7, 1600, 1200, 1400);
  reconstruction.CameraAt(7).has_prior_focal_length = true;
  set(8, 1600, 1200, 1400);  // 0.875 x
  ReconstructionBundleAdjustmentOptions ba;
  FocalGroups groups = FocalGroupsOf(ba, reconstruction);
  ASSERT_EQ(groups.members.size(), 6u);
  for (camera_t c : {1, 2, 3}) EXPECT_NEAR(groups.LogMedianFocal(c), std::log(700), 1e-12);
  // Aspect group 4:3 ratios 0.8, 0.875, 0.95, 0.9, 0.825, 0.875: median 0.875.
  for (camera_t c : {4, 5}) EXPECT_NEAR(groups.LogMedianFocal(c), std::log(0.875 * 410), 1e-12);
  EXPECT_NEAR(groups.LogMedianFocal(8), std::log(1400), 1e-12);
  // With groups of two, cameras 4 and 5 (one size, either orientation) are their own group.
  ba.focal_group_min_size = 2;
  groups = FocalGroupsOf(ba, reconstruction);
  for (camera_t c : {4, 5})
    EXPECT_NEAR(groups.LogMedianFocal(c), 0.5 * (std::log(369) + std::log(338.25)), 1e-12);
}

// Ten images along a street, one camera each, 80 points seen with 1 px noise: focal lengths and
// depths trade off (the focal-depth valley of opensfm-lund).
Reconstruction StreetWithFewPoints() {
  SyntheticDatasetOptions options;
  options.trajectory = SyntheticTrajectory::kStreet;
  options.num_cameras = options.num_images = 10;
  options.num_points3D = 80;
  options.point2D_noise_px = 1.0;
  return SynthesizeDataset(options).truth;
}

// Per-image cameras along a street with few points, their focal lengths started on a gradient:
// without the group prior the adjustment settles on another gradient (focal length and depth
// trade off, as on opensfm-lund), with it they come together. A camera with a focal
// prior and a shared camera get no group prior: an adjustment in which only they are free is the
// same with and without it.
TEST(BundleAdjustmentConfig, FocalGroupPriorPullsPerImageFocalLengthsTogether) {
  Reconstruction start = StreetWithFewPoints();
  // The per-image cameras 1-7 from 0.8 to 1.2 x the truth (their median is the truth).
  for (camera_t c = 1; c <= 7; ++c) start.CameraAt(c).params[0] = 700 * (0.8 + 0.4 * (c - 1) / 6.0);
  // Camera 8 has a focal prior; images 9 and 10 share camera 9 (camera 10 is then unused).
  start.CameraAt(8).params[0] = 0.9 * 700;
  start.CameraAt(8).has_prior_focal_length = true;
  start.CameraAt(9).params[0] = 1.1 * 700;
  start.ImageAt(10).camera_id = 9;
  const auto adjusted = [&](double sigma, bool only_8_and_9) {
    Reconstruction reconstruction = start;
    BundleAdjustmentConfig config = EveryImageWithGauge(reconstruction);
    if (only_8_and_9) {
      for (camera_t c = 1; c <= 7; ++c) config.constant_camera_ids.insert(c);
    }
    ReconstructionBundleAdjustmentOptions ba;
    ba.focal_group_sigma = sigma;
    AdjustReconstruction(ba, config, &reconstruction);
    return reconstruction;
  };
  const auto per_image_range = [](const Reconstruction& r) {
    std::pair<double, double> range(1e300, 0);
    for (camera_t c = 1; c <= 7; ++c) {
      range.first = std::min(range.first, r.CameraAt(c).params[0]);
      range.second = std::max(range.second, r.CameraAt(c).params[0]);
    }
    return range;
  };
  const auto free = per_image_range(adjusted(0, false));
  const double sigma = ReconstructionBundleAdjustmentOptions().focal_group_sigma;
  const auto pulled = per_image_range(adjusted(sigma, false));
  // Without the prior: 800-905 px; with it, the group moves as one where this street's few
  // points put it (the valley), its spread halved: 770-817 px.
  EXPECT_GT(free.second / free.first, 1.1);
  EXPECT_GT(free.first, 1.1 * 700);
  EXPECT_LT(pulled.second / pulled.first, 1.07);
  EXPECT_LT(pulled.second / pulled.first - 1, 0.5 * (free.second / free.first - 1));

  const Reconstruction alone = adjusted(0, true), alone_with_prior = adjusted(sigma, true);
  for (camera_t c : {8, 9}) {
    EXPECT_NE(alone.CameraAt(c).params[0], start.CameraAt(c).params[0]);
    EXPECT_EQ(alone.CameraAt(c).params, alone_with_prior.CameraAt(c).params);
  }
}

// A photo of another device of the same size (a longer lens, 1.6 x the others' focal length) among
// one device's photos, on the street with few points: the group prior, robust, lets it keep the
// focal length its points give, and the others theirs; held quadratically, it drags the whole
// group down the focal-depth valley towards it (as half of opensfm-lund cropped did: every
// focal length 30% short).
TEST(BundleAdjustmentConfig, AZoomedPhotoKeepsItsOwnFocalLengthInItsGroup) {
  Reconstruction start = StreetWithFewPoints();
  constexpr camera_t kZoomed = 5;
  constexpr double kZoom = 1.6;
  Camera& zoomed = start.CameraAt(kZoomed);
  const Eigen::Vector2d centre(zoomed.PrincipalPointX(), zoomed.PrincipalPointY());
  zoomed.params[0] *= kZoom;
  for (image_t id : start.RegImageIds()) {
    Image& image = start.ImageAt(id);
    if (image.camera_id != kZoomed) continue;
    // Distortion acts on normalised coordinates, which a longer focal length leaves as they were.
    std::vector<Point2D> points = image.Points2D();
    for (Point2D& p : points) p.xy = centre + kZoom * (p.xy - centre);
    image.SetPoints2D(points);
    for (point2D_t idx = 0; idx < points.size(); ++idx)
      if (points[idx].HasPoint3D()) image.SetPoint3DForPoint2D(idx, points[idx].point3D_id);
  }
  const Reconstruction truth = start;
  for (camera_t c = 1; c <= 10; ++c) start.CameraAt(c).params[0] *= 0.95;
  ReconstructionBundleAdjustmentOptions ba;
  ASSERT_EQ(FocalGroupsOf(ba, start).members.size(), 10u);
  const double robust = WorstFocalErrorAfterAdjustment(ba, start, truth);
  ba.focal_group_loss_scale = 0;
  const double quadratic = WorstFocalErrorAfterAdjustment(ba, start, truth);
  // Robust: all within 5.5% (the street's few points leave the depth a little open), the zoomed
  // one included (1175 px for 1120). Quadratic: the zoomed one at 998 px and the others with it
  // at 615-630 px for 700.
  EXPECT_LT(robust, 0.06);
  EXPECT_GT(quadratic, 2 * robust);
}

// The group's median moves with it: per-image cameras started together at 0.8 x the truth, where
// the points determine the focal length, reach the truth with the prior as without it (a median
// held at its start would hold them near 0.8 x).
TEST(BundleAdjustmentConfig, FocalGroupMovesWhereThePointsPutIt) {
  SyntheticDatasetOptions options;
  options.num_cameras = options.num_images = 8;
  options.num_points3D = 200;
  options.point2D_noise_px = 0.5;
  Reconstruction reconstruction = SynthesizeDataset(options).truth;
  const double truth = reconstruction.CameraAt(1).params[0];
  for (camera_t c = 1; c <= 8; ++c)
    reconstruction.CameraAt(c).params[0] = truth * (0.78 + 0.04 * (c - 1) / 7.0);
  const BundleAdjustmentConfig config = EveryImageWithGauge(reconstruction);
  ReconstructionBundleAdjustmentOptions ba;
  ASSERT_EQ(FocalGroupsOf(ba, reconstruction).members.size(), 8u);
  AdjustReconstruction(ba, config, &reconstruction);
  for (camera_t c = 1; c <= 8; ++c)
    EXPECT_NEAR(reconstruction.CameraAt(c).params[0] / truth, 1, 0.02) << c;
}

// Per-image cameras with a focal-length prior (EXIF, here the truth) along a street with few
// points: refined freely they slide along the focal-depth valley; prior_focal_lengths holds them
// near their priors.
TEST(BundleAdjustmentConfig, PriorFocalLengthsHoldPerImageCamerasOnAStreet) {
  Reconstruction start = StreetWithFewPoints();
  auto priors = std::make_shared<std::unordered_map<camera_t, double>>();
  for (camera_t c = 1; c <= 10; ++c) {
    start.CameraAt(c).has_prior_focal_length = true;
    (*priors)[c] = start.CameraAt(c).params[0];
  }
  const auto adjusted = [&](bool with_priors) {
    Reconstruction reconstruction = start;
    BundleAdjustmentConfig config = EveryImageWithGauge(reconstruction);
    ReconstructionBundleAdjustmentOptions ba;
    if (with_priors) ba.prior_focal_lengths = priors;
    AdjustReconstruction(ba, config, &reconstruction);
    return reconstruction;
  };
  const Reconstruction free = adjusted(false), held = adjusted(true);
  double free_worst = 0, held_worst = 0;
  for (camera_t c = 1; c <= 10; ++c) {
    free_worst =
        std::max(free_worst, std::abs(std::log(free.CameraAt(c).params[0] / priors->at(c))));
    held_worst =
        std::max(held_worst, std::abs(std::log(held.CameraAt(c).params[0] / priors->at(c))));
  }
  EXPECT_GT(free_worst, 0.1);
  EXPECT_LT(held_worst, 0.05);
}

// hold_per_image_cameras holds a camera of one image (the global mapper's first adjustment), not
// one that several images share.
TEST(BundleAdjustmentConfig, PerImageCamerasCanBeHeld) {
  Reconstruction street = StreetWithFewPoints();
  street.CameraAt(5).params[0] *= 1.1;
  ReconstructionBundleAdjustmentOptions ba;
  ba.hold_per_image_cameras = true;
  Reconstruction held = street;
  AdjustReconstruction(ba, EveryImageWithGauge(held), &held);
  for (camera_t c = 1; c <= 10; ++c) EXPECT_EQ(held.CameraAt(c).params, street.CameraAt(c).params);
  Reconstruction free = street;
  ba.hold_per_image_cameras = false;
  AdjustReconstruction(ba, EveryImageWithGauge(free), &free);
  EXPECT_NE(free.CameraAt(5).params[0], street.CameraAt(5).params[0]);

  const Reconstruction truth = SynthesizeDataset(SyntheticDatasetOptions()).truth;
  Reconstruction shared = truth;
  Perturb(&shared, 3);
  ba.hold_per_image_cameras = true;
  AdjustReconstruction(ba, EveryImageWithGauge(shared), &shared);
  EXPECT_NEAR(shared.CameraAt(1).params[0] / truth.CameraAt(1).params[0], 1, 0.005);
}

// A wrong focal-length prior (a photo cropped to 0.6 of each side keeps its original's EXIF, which
// read at the cropped size says 0.6 x the truth) among right ones, on the street with few points:
// the robust prior lets the points correct it; held quadratically, it drags the street with it.
TEST(BundleAdjustmentConfig, AWrongFocalPriorIsLetGo) {
  const Reconstruction truth = StreetWithFewPoints();
  Reconstruction start = truth;
  auto priors = std::make_shared<std::unordered_map<camera_t, double>>();
  for (camera_t c = 1; c <= 10; ++c) {
    start.CameraAt(c).has_prior_focal_length = true;
    (*priors)[c] = truth.CameraAt(c).params[0] * (c == 5 ? 0.6 : 1);
    start.CameraAt(c).params[0] = priors->at(c);
  }
  ReconstructionBundleAdjustmentOptions ba;
  ba.prior_focal_lengths = priors;
  const double robust = WorstFocalErrorAfterAdjustment(ba, start, truth);
  ba.prior_focal_loss_scale = 0;
  const double quadratic = WorstFocalErrorAfterAdjustment(ba, start, truth);
  // Robust: every focal length within 2% of the truth; quadratic: 7% off.
  EXPECT_LT(robust, 0.04);
  EXPECT_GT(quadratic, 2 * robust);
}

TEST(BundleAdjustmentConfig, SphericalImagesAdjustAsCubemapRigs) {
  // Panoramas (SPHERICAL, 2048 x 1024) walking through a room; keypoints are exact projections
  // plus 0.3 px noise on the 512-pixel cube face each falls on, as the spherical pipeline's
  // extractor finds them, written as panorama pixels.
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::normal_distribution<double> noise(0, 0.3);
  const int face_size = 512;
  const CubemapFaceIntrinsics k = CubemapIntrinsics(face_size);
  Reconstruction truth;
  truth.AddCamera(Camera::CreateFromModelId(1, CameraModelId::kSpherical, 0, 2048, 1024));
  const Camera& camera = truth.CameraAt(1);
  std::vector<Eigen::Vector3d> points;
  for (int j = 0; j < 300; ++j) {
    Eigen::Vector3d p(6 * uniform(rng), 3 * uniform(rng), 3 * uniform(rng));
    p[j % 3] = (uniform(rng) > 0 ? 1 : -1) * (j % 3 == 0 ? 6 : 3);
    points.push_back(p);
  }
  std::vector<Track> tracks(points.size());
  for (int i = 0; i < 5; ++i) {
    Image image;
    image.image_id = i + 1;
    image.name = "pano" + std::to_string(i) + ".jpg";
    image.camera_id = 1;
    const Eigen::Quaterniond q(Eigen::AngleAxisd(0.25 * i, Eigen::Vector3d::UnitY()));
    image.cam_from_world = Rigid3d(q, -(q * Eigen::Vector3d(i - 2.0, 0.1 * i, 0.2)));
    std::vector<Eigen::Vector2d> xys;
    for (size_t j = 0; j < points.size(); ++j) {
      const Eigen::Vector3d ray = image.cam_from_world * points[j];
      const int f = CubemapFaceOfRay(ray);
      const Eigen::Vector3d d = CubemapFaceFromRig(f) * ray;
      const Eigen::Vector3d noisy =
          CubemapRigFromFace(f) * Eigen::Vector3d((d.x() / d.z() * k.focal + noise(rng)) / k.focal,
                                                  (d.y() / d.z() * k.focal + noise(rng)) / k.focal,
                                                  1);
      Eigen::Vector2d xy;
      ASSERT_TRUE(camera.ImgFromCam(noisy, &xy));
      tracks[j].AddElement(image.image_id, xys.size());
      xys.push_back(xy);
    }
    image.SetPoints2D(xys);
    truth.AddImage(image);
    truth.RegisterImage(image.image_id);
  }
  for (size_t j = 0; j < points.size(); ++j) truth.AddPoint3D(points[j], tracks[j]);

  Reconstruction reconstruction = truth;
  Perturb(&reconstruction, 6);
  const BundleAdjustmentConfig config = EveryImageWithGauge(reconstruction);
  ReconstructionBundleAdjustmentOptions options;
  options.cubemap_rig_face_size = face_size;
  const BundleAdjustmentSummary summary = AdjustReconstruction(options, config, &reconstruction);
  EXPECT_TRUE(summary.converged) << summary.termination;
  EXPECT_LT(MaxCenterError(reconstruction, truth), 0.01);
  // The residuals were face pixels: at the face noise's level (0.3 px per axis, less what the
  // points absorb).
  const double rms = std::sqrt(2 * summary.final_cost / summary.num_observations);
  EXPECT_GT(rms, 0.25);
  EXPECT_LT(rms, 0.3 * std::sqrt(2.0));
  for (image_t id : reconstruction.RegImageIds()) {
    EXPECT_LT(RotationAngleBetween(reconstruction.ImageAt(id).cam_from_world.rotation,
                                   truth.ImageAt(id).cam_from_world.rotation) *
                  180 / M_PI,
              0.02);
  }
}

}  // namespace
}  // namespace edgesfm
