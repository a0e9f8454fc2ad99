// A model's trainable variables, read from a model file (scenarios/models/):
// what a parameter-server workload moves every step. See scenarios/README.md
// for the format.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"

namespace tensorwire {

struct ModelVariable {
  std::string name;  // "<layer>/<variable>", e.g. "conv1_1/kernel"
  DataType dtype = DataType::kFloat32;
  TensorShape shape;

  uint64_t parameters() const;  // elements
  uint64_t bytes() const;
};

struct Model {
  std::string name;
  std::string description;
  std::string path;                      // the file it came from
  std::vector<ModelVariable> variables;  // in file order (layer order)

  uint64_t total_parameters() const;
  uint64_t total_bytes() const;
};

// Reads and validates a model file; ScenarioError "file:line:column: key: ..."
// on any problem, including a total_parameters that does not match the sum.
Model load_model_file(const std::string& path);
Model parse_model(std::string_view text, const std::string& source_name);

// <TENSORWIRE_SOURCE_ROOT>/scenarios/models: the shipped model files.
std::string shipped_models_dir();

// Where a scenario's `model = "..."` may be, in lookup order. A bare name
// ("vgg16") means <scenario_dir>/models/vgg16.toml, then
// <shipped_models_dir>/vgg16.toml; a value with a '/' or ending in ".toml" is a
// path, relative to the scenario's folder unless absolute.
std::vector<std::string> model_file_candidates(std::string_view model,
                                               const std::string& scenario_dir);

}  // namespace tensorwire
