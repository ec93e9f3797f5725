// Graphs on the CPU: a capture records the launchers' work (single-source kernels, OpenBLAS,
// oneDNN, copies) without running it, a replay runs it again on the memory the capture used
// and reads the inputs' current values, and what a replay could not repeat (a value read back
// to the host, host data copied in) is refused during the capture.
#include "common/tensor/graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/kernels/conv2d.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/gemm.h"
#include "common/kernels/reduce.h"
#include "common/testing/random_tensor.h"

namespace course {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

Tensor random(const Shape& shape, uint32_t seed) {
  return testing::random_tensor(shape, DType::kF32, Device::cpu(), seed).tensor;
}

TEST(Graph, CaptureRecordsTheWorkAndEachReplayRunsIt) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3});
  Graph graph(Device::cpu());
  graph.capture([&] { scale_(x, 2.0f); });
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  graph.replay();
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{2, 4, 6}));
  graph.replay();
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{4, 8, 12}));
}

TEST(Graph, ReplaysReadTheInputsCurrentValuesIntoMemoryNothingElseTakes) {
  Tensor a = random({6, 5}, 1), b = random({5, 7}, 2);
  Tensor c;  // allocated during the capture, from the graph's pool
  Graph graph(Device::cpu());
  graph.capture([&] { c = relu_forward(add(matmul(a, b), matmul(a, b))); });
  for (uint32_t round = 0; round < 3; ++round) {
    copy_(a, random({6, 5}, 10 + round));
    Tensor eager_twin = zeros({6, 7});  // same size as c, allocated between replays
    fill_(eager_twin, 1e6);
    graph.replay();
    const Tensor expected = relu_forward(add(matmul(a, b), matmul(a, b)));
    EXPECT_EQ(c.to_vector<float>(), expected.to_vector<float>()) << "round " << round;
    EXPECT_EQ(eager_twin.to_vector<float>(), std::vector<float>(42, 1e6f));
  }
}

TEST(Graph, ConvolutionsReplayWithNewInputsAndWeights) {
  const Conv2dShape conv{.stride = 1, .padding = 1};
  Tensor x = random({2, 3, 8, 8}, 3), w = random({4, 3, 3, 3}, 4);
  Tensor y, dx;
  Graph graph(Device::cpu());
  graph.capture([&] {
    y = conv2d_forward(x, w, conv);
    dx = conv2d_backward_data(y, w, x, conv);
  });
  copy_(x, random({2, 3, 8, 8}, 5));
  copy_(w, random({4, 3, 3, 3}, 6));
  graph.replay();
  const Tensor eager_y = conv2d_forward(x, w, conv);
  EXPECT_EQ(y.to_vector<float>(), eager_y.to_vector<float>());
  EXPECT_EQ(dx.to_vector<float>(), conv2d_backward_data(eager_y, w, x, conv).to_vector<float>());
}

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
