// Graphs: a capture records the launchers' work (single-source kernels, the BLAS and
// convolution libraries, copies) without running it, a replay runs it again on the memory the
// capture used and reads the inputs' current values, and what a replay could not repeat (a
// value read back to the host, host data copied in) is refused during the capture. The same
// cases run on a GPU where one is visible: a CUDA graph with cuBLAS and cuDNN inside, the
// libraries' handles first made during the capture.
#include "common/tensor/graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/kernels/conv2d.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/gemm.h"
#include "common/kernels/reduce.h"
#include "common/testing/devices.h"
#include "common/testing/random_tensor.h"

namespace course {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

Tensor random(const Shape& shape, uint32_t seed, Device device = Device::cpu()) {
  return testing::random_tensor(shape, DType::kF32, device, seed).tensor;
}

class GraphOn : public testing::DeviceTest {};

TEST_P(GraphOn, CaptureRecordsTheWorkAndEachReplayRunsIt) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3}, device());
  Graph graph(device());
  graph.capture([&] { scale_(x, 2.0f); });
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  graph.replay();
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{2, 4, 6}));
  graph.replay();
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{4, 8, 12}));
}

TEST_P(GraphOn, ReplaysReadTheInputsCurrentValuesIntoMemoryNothingElseTakes) {
  Tensor a = random({6, 5}, 1, device()), b = random({5, 7}, 2, device());
  Tensor c;  // allocated during the capture, from the graph's pool
  Graph graph(device());
  graph.capture([&] { c = relu_forward(add(matmul(a, b), matmul(a, b))); });
  for (uint32_t round = 0; round < 3; ++round) {
    copy_(a, random({6, 5}, 10 + round, device()));
    Tensor eager_twin = zeros({6, 7}, DType::kF32, device());  // c's size, made between replays
    fill_(eager_twin, 1e6);
    graph.replay();
    const Tensor expected = relu_forward(add(matmul(a, b), matmul(a, b)));
    EXPECT_EQ(c.to_vector<float>(), expected.to_vector<float>()) << "round " << round;
    EXPECT_EQ(eager_twin.to_vector<float>(), std::vector<float>(42, 1e6f));
  }
}

TEST_P(GraphOn, ConvolutionsReplayWithNewInputsAndWeights) {
  const Conv2dShape conv{.stride = 1, .padding = 1};
  Tensor x = random({2, 3, 8, 8}, 3, device()), w = random({4, 3, 3, 3}, 4, device());
  Tensor y, dx;
  Graph graph(device());
  graph.capture([&] {
    y = conv2d_forward(x, w, conv);
    dx = conv2d_backward_data(y, w, x, conv);
  });
  copy_(x, random({2, 3, 8, 8}, 5, device()));
  copy_(w, random({4, 3, 3, 3}, 6, device()));
  graph.replay();
  const Tensor eager_y = conv2d_forward(x, w, conv);
  EXPECT_EQ(y.to_vector<float>(), eager_y.to_vector<float>());
  EXPECT_EQ(dx.to_vector<float>(), conv2d_backward_data(eager_y, w, x, conv).to_vector<float>());
}

INSTANTIATE_TEST_SUITE_P(Devices, GraphOn, ::testing::ValuesIn(testing::test_devices()),
                         testing::device_test_name);

TEST(Graph, HostReadsAndHostDataAreRefusedDuringTheCapture) {
  const Tensor x = random({100}, 7);
  const auto capture_fails = [](const std::function<void()>& work, const char* what) {
    Graph graph(Device::cpu());
    EXPECT_THAT([&] { graph.capture(work); },
                ThrowsMessage<GraphCaptureError>(
                    AllOf(HasSubstr(what), HasSubstr("inside a graph capture"))));
    EXPECT_FALSE(graph.captured());
    EXPECT_FALSE(capturing());
    EXPECT_THROW(graph.replay(), Error);
  };
  capture_fails([&] { sum(x); }, "a reduction whose result is read on the host");
  capture_fails([&] { x.to_vector<float>(); }, "reading a tensor's values on the host");
  capture_fails([] { Tensor::from_vector<float>({1}, {1}); }, "a tensor made from host values");
}

TEST(Graph, CapturesOnceAndNotInsideAnother) {
  Tensor x = zeros({4});
  Graph outer(Device::cpu());
  outer.capture([&] {
    Graph inner(Device::cpu());
    EXPECT_THROW(inner.capture([&] { fill_(x, 1.0); }), Error);
  });
  EXPECT_THAT([&] { outer.capture([] {}); },
              ThrowsMessage<Error>(HasSubstr("a graph is captured once")));
}

}  // namespace
}  // namespace course
