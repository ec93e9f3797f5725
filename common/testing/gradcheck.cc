// Finite-difference gradient checks of modules.
#include "common/testing/gradcheck.h"

#include <functional>
#include <random>

#include "common/kernels/layout.h"
#include "common/testing/random_tensor.h"

namespace course::testing {

namespace {

// A tensor like `like` (shape, device, memory format) holding the logical `values`.
Tensor rebuild(const std::vector<float>& values, const Tensor& like) {
  return to_memory_format(Tensor::from_vector(values, like.shape(), like.device()),
                          like.memory_format());
}

std::vector<float> logical_values(const Tensor& t) {
  return to_floats(t.dim() == 4 ? to_memory_format(t, MemoryFormat::kContiguous) : t);
}

double weighted_sum(const Tensor& y, const std::vector<float>& weights) {
  const std::vector<float> values = logical_values(y);
  double total = 0;
  for (size_t i = 0; i < values.size(); ++i) total += static_cast<double>(values[i]) * weights[i];
  return total;
}

std::vector<int64_t> sample(int64_t count, int samples, std::mt19937& rng) {
  std::vector<int64_t> picks;
  if (count <= samples) {
    for (int64_t i = 0; i < count; ++i) picks.push_back(i);
    return picks;
  }
  std::uniform_int_distribution<int64_t> any(0, count - 1);
  for (int s = 0; s < samples; ++s) picks.push_back(any(rng));
  return picks;
}

}  // namespace

::testing::AssertionResult check_gradients(nn::Module& module, const Tensor& x,
                                           const GradCheckOptions& options) {
  std::mt19937 rng(options.seed);
  Tensor input = x;  // what every forward pass below reads; perturbed in place of x
  const Tensor y = module.forward(input);
  const TestTensor weights = random_tensor(y.shape(), DType::kF32, y.device(), options.seed + 1);
  const Tensor grad_out =
      y.dim() == 4 ? to_memory_format(weights.tensor, y.memory_format()) : weights.tensor;
  module.zero_grad();
  const Tensor dx = module.backward(grad_out);
  const std::vector<float> analytic_dx =
      options.input_gradient ? logical_values(dx) : std::vector<float>();

  const auto numeric_at = [&](const std::function<void(float)>& set, float original) {
    set(original + static_cast<float>(options.step));
    const double plus = weighted_sum(module.forward(input), weights.values);
    set(original - static_cast<float>(options.step));
    const double minus = weighted_sum(module.forward(input), weights.values);
    set(original);
    return static_cast<float>((plus - minus) / (2 * options.step));
  };

  std::vector<float> analytic, numeric;
  std::vector<std::string> where;
  std::vector<float> x_values = options.input_gradient ? logical_values(x) : std::vector<float>();
  for (int64_t i : sample(x_values.size(), options.samples_per_tensor, rng)) {
    analytic.push_back(analytic_dx[i]);
    numeric.push_back(numeric_at(
        [&](float v) {
          x_values[i] = v;
          input = rebuild(x_values, x);
        },
        x_values[i]));
    where.push_back("input[" + std::to_string(i) + "]");
  }
  for (auto& [name, p] : module.state().parameters) {
    std::vector<float> values = to_floats(p->value);
    const std::vector<float> grads = to_floats(p->grad);
    for (int64_t i : sample(p->value.numel(), options.samples_per_tensor, rng)) {
      analytic.push_back(grads[i]);
      numeric.push_back(numeric_at(
          [&](float v) {
            values[i] = v;
            p->value = Tensor::from_vector(values, p->value.shape(), p->value.device());
          },
          values[i]));
      where.push_back(name + "[" + std::to_string(i) + "]");
    }
  }
  ::testing::AssertionResult result = all_close(analytic, numeric, options.tolerance);
  if (!result) {
    result << "\n  checked, in order:";
    for (size_t k = 0; k < where.size(); ++k) result << " " << k << "=" << where[k];
  }
  return result;
}

}  // namespace course::testing
