// Per-sample jitter draws uploaded and applied by the device kernels.
#include "common/data/batch_augment.h"

#include "common/core/error.h"
#include "common/kernels/batch_augment.h"
#include "common/tensor/pinned_staging.h"

namespace course {

Tensor jitter_batch(const Tensor& images, const std::vector<JitterDraw>& draws,
                    const std::vector<float>& mean, const std::vector<float>& std) {
  const int64_t n = static_cast<int64_t>(draws.size());
  COURSE_CHECK(images.dim() == 4 && images.size(0) == n, "jitter draws for ", n,
               " samples, images ", images.str());
  std::vector<int32_t> geometry;
  std::vector<float> factors;
  for (const JitterDraw& d : draws) {
    geometry.insert(geometry.end(), {d.flip ? 1 : 0, d.dx, d.dy});
    factors.insert(factors.end(), {d.brightness, d.contrast});
  }
  const Device device = images.device();
  return augment_batch_on_device(images, upload_to(device, geometry, {n, 3}),
                                 upload_to(device, factors, {n, 2}), mean, std);
}

Tensor jitter_batch(const Tensor& images, const JitterOptions& options,
                    const std::vector<float>& mean, const std::vector<float>& std,
                    std::mt19937& rng) {
  validate(options);
  COURSE_CHECK(images.dim() == 4, "batch jitter needs (N, C, H, W) images, got ", images.str());
  std::vector<JitterDraw> draws;
  for (int64_t i = 0; i < images.size(0); ++i) draws.push_back(draw_jitter(options, true, rng));
  return jitter_batch(images, draws, mean, std);
}

}  // namespace course
