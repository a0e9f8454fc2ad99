#include "scenario/model_file.h"

#include <filesystem>
#include <limits>
#include <set>
#include <utility>

#include "scenario/scenario.h"
#include "scenario/scenario_limits.h"
#include "scenario/text_file.h"
#include "scenario/toml_table_reader.h"

#ifndef TENSORWIRE_SOURCE_ROOT
#error "scenario/meson.build passes -DTENSORWIRE_SOURCE_ROOT"
#endif

namespace tensorwire {
namespace {

constexpr size_t kMaxModelVariables = 100000;

// One [[layer.variables]] entry, named '<layer>/<variable>', added to the
// model; `names` holds the names seen so far.
void add_variable(const TomlTableReader& var, const std::string& layer_name,
                  DataType default_dtype, std::set<std::string>& names, Model& model) {
  std::string var_name = var.required(var.string("name"), "name");
  if (var_name.empty() || var_name.size() > scenario_limits::kMaxNameBytes) {
    var.fail("name", "a variable name is 1 to 1024 bytes");
  }
  ModelVariable v;
  v.name = layer_name + "/" + var_name;
  if (v.name.size() > scenario_limits::kMaxVariableNameBytes) {
    var.fail("name", "'<layer>/<variable>' is at most " +
                         std::to_string(scenario_limits::kMaxVariableNameBytes) +
                         " bytes (tensor names travel in a " +
                         std::to_string(scenario_limits::kMaxTensorNameBytes) +
                         "-byte wire field)");
  }
  v.dtype = var.data_type("dtype").value_or(default_dtype);
  if (v.dtype == DataType::kString) {
    var.fail("dtype", "model variables are numeric; string is not allowed");
  }
  v.shape = var.required(var.shape("shape"), "shape");
  for (int64_t d : v.shape.dims) {
    if (d == 0) var.fail("shape", "a variable has no zero-sized dimension");
  }
  uint64_t elements = v.parameters();
  if (elements > scenario_limits::kMaxTensorBytes / data_type_size(v.dtype)) {
    var.fail("shape", "the variable is larger than 2 GiB (one RDMA write carries at most "
                      "2^31 bytes)");
  }
  if (!names.insert(v.name).second) {
    var.fail("name", "variable '" + v.name + "' is defined twice");
  }
  if (model.variables.size() >= kMaxModelVariables) {
    var.fail("name", "a model has at most " + std::to_string(kMaxModelVariables) + " variables");
  }
  model.variables.push_back(std::move(v));
}

// The i-th [[layer]] table and its variables.
void add_layer(const toml::table& layer_table, size_t i, const std::string& file,
               DataType default_dtype, std::set<std::string>& names, Model& model) {
  TomlTableReader layer(layer_table, indexed_path("layer", i), file, {"name", "variables"});
  std::string layer_name = layer.required(layer.string("name"), "name");
  if (layer_name.empty() || layer_name.size() > scenario_limits::kMaxNameBytes) {
    layer.fail("name", "a layer name is 1 to 1024 bytes");
  }
  const toml::array* vars = layer.array_of_tables("variables");
  if (vars == nullptr || vars->empty()) layer.fail_missing("variables");
  for (size_t j = 0; j < vars->size(); ++j) {
    const toml::table& var_table = *vars->get(j)->as_table();
    TomlTableReader var(var_table, indexed_path(layer.key_path("variables"), j), file,
                        {"name", "shape", "dtype"});
    add_variable(var, layer_name, default_dtype, names, model);
  }
}

}  // namespace

uint64_t ModelVariable::parameters() const { return shape.num_elements().value_or(0); }
uint64_t ModelVariable::bytes() const { return parameters() * data_type_size(dtype); }

uint64_t Model::total_parameters() const {
  uint64_t total = 0;
  for (const auto& v : variables) total += v.parameters();
  return total;
}

uint64_t Model::total_bytes() const {
  uint64_t total = 0;
  for (const auto& v : variables) total += v.bytes();
  return total;
}

Model parse_model(std::string_view text, const std::string& source_name) {
  const std::string& file = source_name;
  toml::table root = parse_toml_document(text, file);
  TomlTableReader top(root, "", file,
                      {"name", "description", "dtype", "total_parameters", "layer"});
  Model model;
  model.path = source_name;
  model.name = top.string("name").value_or(std::filesystem::path(source_name).stem().string());
  model.description = top.string("description").value_or("");
  DataType default_dtype = top.data_type("dtype").value_or(DataType::kFloat32);
  if (default_dtype == DataType::kString) {
    top.fail("dtype", "model variables are numeric; string is not allowed");
  }
  const toml::array* layers = top.array_of_tables("layer");
  if (layers == nullptr || layers->empty()) {
    top.fail_missing("layer");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < layers->size(); ++i) {
    add_layer(*layers->get(i)->as_table(), i, file, default_dtype, names, model);
  }
  if (std::optional<int64_t> declared =
          top.integer("total_parameters", 1, std::numeric_limits<int64_t>::max())) {
    uint64_t sum = model.total_parameters();
    if (static_cast<uint64_t>(*declared) != sum) {
      top.fail("total_parameters", "declares " + std::to_string(*declared) +
                                       " parameters but the variables add up to " +
                                       std::to_string(sum));
    }
  }
  return model;
}

Model load_model_file(const std::string& path) {
  Result<std::string> text = read_text_file(path);
  if (!text) throw ScenarioError(path + ": " + text.status().message());
  return parse_model(*text, path);
}

std::string shipped_models_dir() {
  return std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/models";
}

std::vector<std::string> model_file_candidates(std::string_view model,
                                               const std::string& scenario_dir) {
  namespace fs = std::filesystem;
  const fs::path dir = scenario_dir.empty() ? fs::path(".") : fs::path(scenario_dir);
  const bool is_path = model.find('/') != std::string_view::npos ||
                       (model.size() >= 5 && model.substr(model.size() - 5) == ".toml");
  if (is_path) {
    fs::path p(model);
    return {p.is_absolute() ? p.string() : (dir / p).lexically_normal().string()};
  }
  const std::string file = std::string(model) + ".toml";
  return {(dir / "models" / file).lexically_normal().string(),
          (fs::path(shipped_models_dir()) / file).lexically_normal().string()};
}

}  // namespace tensorwire
