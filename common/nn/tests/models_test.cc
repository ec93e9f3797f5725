// Models: the registry's families against what their models do, parameter counts against
// torchvision's published figures for the same architectures, output shapes, and determinism of
// the seeded construction.
#include "common/models/models.h"

#include <gtest/gtest.h>

#include <set>

#include "common/kernels/elementwise.h"
#include "common/models/coatnet/coatnet.h"
#include "common/models/convnets/convnets.h"
#include "common/models/gpt/gpt_config.h"
#include "common/models/model_registry.h"
#include "common/models/vit/vit.h"
#include "common/testing/errors_and_files.h"

namespace course::nn {
namespace {

TEST(Models, ParameterCountsMatchTorchvision) {
  // torchvision.models.resnet18() / resnet50(): 11,689,512 and 25,557,032 parameters.
  auto resnet18 =
      make_model({.name = "resnet18", .in_channels = 3, .num_classes = 1000}, Device::cpu());
  EXPECT_EQ(resnet18->parameter_count(), 11689512);
  auto resnet50 =
      make_model({.name = "resnet50", .in_channels = 3, .num_classes = 1000}, Device::cpu());
  EXPECT_EQ(resnet50->parameter_count(), 25557032);
}

TEST(Models, SmallNetworksParametersCountedByHand) {
  // Three 3x3 convolutions (no bias) with batch norm (2 per channel), a linear classifier:
  // smallnet 1x32x9 + 64, 32x64x9 + 128, 64x128x9 + 256, 128x10 + 10;
  // tinynet, a quarter as wide: 1x8x9 + 16, 8x16x9 + 32, 16x32x9 + 64, 32x10 + 10.
  auto smallnet = make_model({.name = "smallnet"}, Device::cpu());
  EXPECT_EQ(smallnet->parameter_count(), 352 + 18560 + 73984 + 1290);
  auto tinynet = make_model({.name = "tinynet"}, Device::cpu());
  EXPECT_EQ(tinynet->parameter_count(), 88 + 1184 + 4672 + 330);
}

// ResNet-18 with the CIFAR stem counted layer by layer: a 3x3 stem convolution to w channels,
// four stages of w, 2w, 4w and 8w channels of two basic blocks (two 3x3 convolutions, each with
// batch norm; a 1x1 convolution with batch norm where the channels change), a linear head. At
// the paper's w = 64: 11,173,962; the narrow one of the sharding tests: w = 16.
int64_t resnet18_cifar_count(int64_t w, int64_t in_channels, int64_t classes) {
  int64_t count = 9 * in_channels * w + 2 * w, channels = w;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t out = w << stage;
    for (int block = 0; block < 2; ++block) {
      count += 9 * channels * out + 2 * out + 9 * out * out + 2 * out;
      if (channels != out) count += channels * out + 2 * out;
      channels = out;
    }
  }
  return count + channels * classes + classes;
}

TEST(Models, ResnetWidthScalesEveryStage) {
  EXPECT_EQ(resnet18_cifar_count(64, 3, 10), 11173962);
  for (const int64_t width : {64, 16, 5}) {
    auto net = make_model(
        {.name = "resnet18-cifar", .in_channels = 3, .num_classes = 10, .resnet_width = width},
        Device::cpu());
    EXPECT_EQ(net->parameter_count(), resnet18_cifar_count(width, 3, 10)) << "width " << width;
    const Tensor out = net->forward(zeros({2, 3, 8, 8}));
    EXPECT_EQ(out.shape(), (Shape{2, 10})) << "width " << width;
  }
  EXPECT_THROW(make_model({.name = "resnet18-cifar", .resnet_width = 0}, Device::cpu()), Error);
}

// Every model on its smallest image (the Vision Transformers built for it), but the ViTs of
// hundreds of millions of parameters.
TEST(Models, ForwardShapesAndSeededWeights) {
  for (const std::string& name : image_model_names()) {
    const ModelFamilySpec& family = model_family(name);
    if (&family == &vit_family() && vit_parameter_count(vit_preset(name)) > 100'000'000) continue;
    if (&family == &coatnet_family() &&
        coatnet_parameter_count(coatnet_preset(name)) > 30'000'000) {
      continue;
    }
    const int64_t side = min_image_size(name);
    const ModelConfig config{
        .name = name, .in_channels = 1, .num_classes = 7, .seed = 5, .image_size = side};
    auto model = make_model(config, Device::cpu());
    Tensor x = zeros({2, 1, side, side});
    EXPECT_EQ(model->forward(x).shape(), (Shape{2, 7})) << name;
    auto again = make_model(config, Device::cpu());
    EXPECT_EQ(again->parameters().front()->value.to_vector<float>(),
              model->parameters().front()->value.to_vector<float>());
  }
  auto other = make_model({.name = "smallnet", .seed = 6}, Device::cpu());
  auto base = make_model({.name = "smallnet", .seed = 5}, Device::cpu());
  EXPECT_NE(other->parameters().front()->value.to_vector<float>(),
            base->parameters().front()->value.to_vector<float>());
}

TEST(Models, NamesFollowTheModuleTree) {
  auto model = make_model({.name = "resnet18"}, Device::cpu());
  const ModuleState state = model->state();
  EXPECT_EQ(state.parameters.front().first, "stem.0.weight");
  EXPECT_EQ(state.parameters.back().first, "fc.bias");
  bool found = false;
  for (const auto& [name, tensor] : state.buffers)
    found |= name == "layer2.0.downsample.1.running_var";
  EXPECT_TRUE(found);
}

TEST(Models, UnknownNamesAndImagesTooSmallAreErrors) {
  EXPECT_THROW(make_model({.name = "vgg16"}, Device::cpu()), Error);
  auto model = make_model({.name = "smallnet"}, Device::cpu());
  EXPECT_THROW(model->forward(zeros({1, 1, 3, 3})), Error);  // the second pooling has no input
}

// Every name belongs to one family, the one model_family answers; every GPT preset is
// registered, under its decoder's family; an unknown name is refused with the registered ones.
TEST(ModelRegistry, EveryNameHasOneFamilyAndAnUnknownOneIsRefused) {
  std::set<std::string> names;
  size_t registered = 0;
  for (const ModelFamilySpec* family : model_families()) {
    const std::vector<std::string> family_names = family->names();
    EXPECT_FALSE(family_names.empty()) << family->traits.name;
    for (const std::string& name : family_names) {
      EXPECT_EQ(&model_family(name), family) << name;
      names.insert(name);
      ++registered;
    }
  }
  EXPECT_EQ(names.size(), registered) << "a name registered by two families";
  for (const GptConfig& config : gpt_presets()) {
    EXPECT_EQ(&model_family(config.name), config.llama() ? &llama_family() : &gpt2_family())
        << config.name;
  }
  const std::string error = testing::error_of([] { model_family("vit-b17"); });
  EXPECT_NE(error.find("unknown model 'vit-b17'"), std::string::npos) << error;
  EXPECT_NE(error.find("llama-tiny"), std::string::npos) << error;
  EXPECT_NE(error.find("resnet18-cifar"), std::string::npos) << error;
}

// The registry lists the families in their registered positions (smallnet's first, CoAtNet's
// last), and refuses a family registered twice or a position already held, leaving the listing
// as it was.
TEST(ModelRegistry, ListsTheFamiliesInTheirPositionsAndRefusesASecondRegistration) {
  const std::vector<const ModelFamilySpec*> before = model_families();
  ASSERT_EQ(before.size(), 6u);
  EXPECT_EQ(before.front(), &small_net_family());
  EXPECT_EQ(before[2], &gpt2_family());
  EXPECT_EQ(before.back(), &coatnet_family());
  const std::string twice = testing::error_of([] { register_model_family(vit_family(), 17); });
  EXPECT_NE(twice.find("ViT is registered twice, at positions 4 and 17"), std::string::npos)
      << twice;
  static const ModelFamilySpec stranger{
      .traits = {.name = "stranger",
                 .images = true,
                 .transformer_blocks = false,
                 .in_pieces = false},
      .names = [] { return std::vector<std::string>{"stranger-1"}; }};
  const std::string held = testing::error_of([] { register_model_family(stranger, 4); });
  EXPECT_NE(held.find("stranger registered at position 4, which ViT holds"), std::string::npos)
      << held;
  EXPECT_EQ(model_families(), before);
}

// The traits against the models: an image family's models build and classify an image of their
// smallest side, a language family's are refused by the image builder; exactly the families in
// pieces come in model_pieces; the image names are the image families' names.
TEST(ModelRegistry, TraitsAreWhatTheFamiliesModelsDo) {
  std::vector<std::string> image_names;
  for (const ModelFamilySpec* family : model_families()) {
    const ModelFamilyTraits& traits = family->traits;
    const std::string name = family->names().front();
    if (traits.images) {
      const int64_t side = min_image_size(name);
      auto model = make_model({.name = name, .num_classes = 3, .image_size = side}, Device::cpu());
      EXPECT_EQ(model->forward(zeros({1, 1, side, side})).shape(), (Shape{1, 3})) << name;
      for (const std::string& each : family->names()) image_names.push_back(each);
    } else {
      const std::string error =
          testing::error_of([&] { make_model({.name = name}, Device::cpu()); });
      EXPECT_NE(error.find("reads tokens"), std::string::npos) << name << ": " << error;
    }
    const std::string pieces_error = testing::error_of([&] { model_pieces({.name = name}); });
    EXPECT_EQ(pieces_error == "no error", traits.in_pieces) << name << ": " << pieces_error;
  }
  EXPECT_EQ(image_model_names(), image_names);
}

// Each family's spec registers what its traits promise, and its entries agree with the models:
// image families give their smallest input and a builder or pieces (never both); exactly the
// families in pieces give pieces, their preset's own input and a parameter count, which is the
// built model's; language families give names alone.
TEST(ModelRegistry, EachSpecRegistersWhatItsTraitsPromise) {
  for (const ModelFamilySpec* family : model_families()) {
    const ModelFamilySpec& spec = *family;
    const ModelFamilyTraits& traits = spec.traits;
    EXPECT_EQ(spec.min_image_size != nullptr, traits.images) << traits.name;
    EXPECT_EQ(spec.pieces != nullptr, traits.in_pieces) << traits.name;
    EXPECT_EQ(spec.own_config != nullptr, traits.in_pieces) << traits.name;
    EXPECT_EQ(spec.parameter_count != nullptr, traits.in_pieces) << traits.name;
    EXPECT_EQ(spec.build != nullptr, traits.images && !traits.in_pieces) << traits.name;
    if (!traits.in_pieces) continue;
    const std::string name = spec.names().front();
    const ModelConfig own = spec.own_config(name);
    EXPECT_EQ(own.name, name);
    const ModelConfig small{
        .name = name, .in_channels = 2, .num_classes = 5, .image_size = spec.min_image_size(name)};
    EXPECT_EQ(spec.parameter_count(small), make_model(small, Device::cpu())->parameter_count())
        << name;
  }
}

}  // namespace
}  // namespace course::nn
