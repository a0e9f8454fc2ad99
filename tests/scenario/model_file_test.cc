// The shipped model files and the model-file format.
#include "scenario/model_file.h"

#include <gtest/gtest.h>

#include <string>

#include "scenario/scenario.h"

namespace tensorwire {
namespace {

const std::string kModels = std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/models/";

std::string error_of(const std::string& text) {
  try {
    parse_model(text, "m.toml");
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(ShippedModels, Vgg16HasTheCanonicalParameterCount) {
  Model m = load_model_file(kModels + "vgg16.toml");
  EXPECT_EQ(m.name, "vgg16");
  EXPECT_EQ(m.variables.size(), 32u);  // 13 conv + 3 fc, kernel and bias each
  EXPECT_EQ(m.total_parameters(), 138357544u);
  EXPECT_EQ(m.total_bytes(), 138357544u * 4);
  EXPECT_EQ(m.variables.front().name, "conv1_1/kernel");
  EXPECT_EQ(m.variables.front().shape.dims, (std::vector<int64_t>{3, 3, 3, 64}));
  // The largest variable: fc6 maps 7x7x512 features to 4096.
  EXPECT_EQ(m.variables[26].name, "fc6/kernel");
  EXPECT_EQ(m.variables[26].parameters(), 25088u * 4096);
}

TEST(ShippedModels, ResNet50HasTheCanonicalTrainableParameterCount) {
  Model m = load_model_file(kModels + "resnet50.toml");
  EXPECT_EQ(m.name, "resnet50");
  // 53 conv kernels, 53 batch norms x (gamma, beta), fc kernel and bias.
  EXPECT_EQ(m.variables.size(), 161u);
  EXPECT_EQ(m.total_parameters(), 25557032u);
  EXPECT_EQ(m.variables.back().name, "predictions/bias");
}

TEST(ModelFile, MinimalModelWithDefaults) {
  Model m = parse_model(
      "[[layer]]\nname = \"dense\"\nvariables = [{ name = \"kernel\", shape = [4, 2] },"
      " { name = \"bias\", shape = [2], dtype = \"float16\" }]\n",
      "dir/tiny.toml");
  EXPECT_EQ(m.name, "tiny");  // the file stem
  ASSERT_EQ(m.variables.size(), 2u);
  EXPECT_EQ(m.variables[0].name, "dense/kernel");
  EXPECT_EQ(m.variables[0].dtype, DataType::kFloat32);
  EXPECT_EQ(m.variables[1].dtype, DataType::kFloat16);
  EXPECT_EQ(m.total_bytes(), 8u * 4 + 2u * 2);
}

TEST(ModelFile, WrongDeclaredTotalIsAnErrorAtThatKey) {
  std::string e = error_of(
      "total_parameters = 9\n[[layer]]\nname = \"a\"\nvariables = [{ name = \"k\", shape = [2, "
      "2] }]\n");
  EXPECT_TRUE(contains(e, "m.toml:1:20: total_parameters: declares 9")) << e;
  EXPECT_TRUE(contains(e, "add up to 4")) << e;
}

TEST(ModelFile, DuplicateVariableIsAnError) {
  std::string e = error_of(
      "[[layer]]\nname = \"a\"\nvariables = [{ name = \"k\", shape = [1] }]\n"
      "[[layer]]\nname = \"a\"\nvariables = [{ name = \"k\", shape = [1] }]\n");
  EXPECT_TRUE(contains(e, "m.toml:6:")) << e;
  EXPECT_TRUE(contains(e, "layer[1].variables[0].name")) << e;
  EXPECT_TRUE(contains(e, "defined twice")) << e;
}

TEST(ModelFile, BadVariablesAreErrors) {
  EXPECT_TRUE(contains(error_of("name = \"x\"\n"), "m.toml:1:1: layer: missing required key"));
  EXPECT_TRUE(contains(
      error_of("[[layer]]\nname = \"a\"\nvariables = [{ name = \"k\", shape = [0, 3] }]\n"),
      "no zero-sized dimension"));
  EXPECT_TRUE(
      contains(error_of("[[layer]]\nname = \"a\"\nvariables = [{ name = \"k\", shape = [-1] }]\n"),
               "m.toml:3:37: layer[0].variables[0].shape[0]: -1 is out of range"));
  EXPECT_TRUE(
      contains(error_of("[[layer]]\nname = \"a\"\nvariables = [{ name = \"k\", shap = [1] }]\n"),
               "layer[0].variables[0].shap: unknown key (did you mean 'shape'?)"));
  EXPECT_TRUE(contains(
      error_of("[[layer]]\nname = \"a\"\nvariables = [{ name = \"k\", shape = [1], dtype = "
               "\"string\" }]\n"),
      "numeric"));
  EXPECT_TRUE(contains(error_of("[[layer]]\nname = \"a\"\nvariables = []\n"),
                       "layer[0].variables: missing required key"));
  // "<layer>/<variable>" plus the workload's suffix must fit the wire's name field.
  const std::string long_layer(490, 'L');
  EXPECT_TRUE(contains(error_of("[[layer]]\nname = \"" + long_layer +
                                "\"\nvariables = [{ name = \"kernel\", shape = [1] }]\n"),
                       "layer[0].variables[0].name: '<layer>/<variable>' is at most 496 bytes"));
}

TEST(ModelFile, MissingFileNamesThePath) {
  try {
    load_model_file("/nonexistent/model.toml");
    FAIL() << "loaded a missing file";
  } catch (const ScenarioError& e) {
    EXPECT_TRUE(contains(e.what(), "/nonexistent/model.toml")) << e.what();
  }
}

TEST(ModelFile, CandidatesForANameAndForAPath) {
  std::vector<std::string> by_name = model_file_candidates("vgg16", "/s/dir");
  ASSERT_EQ(by_name.size(), 2u);
  EXPECT_EQ(by_name[0], "/s/dir/models/vgg16.toml");
  EXPECT_EQ(by_name[1], shipped_models_dir() + "/vgg16.toml");
  EXPECT_EQ(model_file_candidates("my/net.toml", "/s/dir"),
            std::vector<std::string>{"/s/dir/my/net.toml"});
  EXPECT_EQ(model_file_candidates("/abs/net.toml", "/s/dir"),
            std::vector<std::string>{"/abs/net.toml"});
  EXPECT_EQ(model_file_candidates("net.toml", ""), std::vector<std::string>{"net.toml"});
}

}  // namespace
}  // namespace tensorwire
