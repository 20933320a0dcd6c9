#include "tools/bench/reference_check.h"

#include <stdlib.h>

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/model/job_config.h"
#include "core/model/model.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/process/subprocess.h"
#include "core/status.h"
#include "core/util/json_file.h"
#include "core/util/scratch_directory.h"
#include "tools/bench/harness/contender_environment.h"

namespace strata::bench {
namespace {

using nlohmann::json;

// A tensor file: uint64 n, n bytes of JSON {"tensors": [{"name", "shape",
// "offset"}], ...}, then the float32 data at those byte offsets.
class TensorFileWriter {
 public:
  void Add(const std::string& name, const Tensor& t) {
    header_["tensors"].push_back({{"name", name}, {"shape", t.shape().dims()}, {"offset", size_}});
    tensors_.push_back(t);
    size_ += t.nbytes();
  }
  json& header() { return header_; }
  absl::Status Write(const std::string& path) const {
    std::ofstream out(path, std::ios::binary);
    const std::string text = header_.dump();
    const uint64_t n = text.size();
    out.write(reinterpret_cast<const char*>(&n), sizeof(n));
    out.write(text.data(), static_cast<std::streamsize>(n));
    for (const Tensor& t : tensors_) {
      out.write(reinterpret_cast<const char*>(t.data()), static_cast<std::streamsize>(t.nbytes()));
    }
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
    return absl::OkStatus();
  }

 private:
  json header_ = {{"tensors", json::array()}};
  std::vector<Tensor> tensors_;
  int64_t size_ = 0;
};

Tensor Uniform(const Shape& shape, uint64_t seed) {
  Rng rng(seed);
  Tensor t = Tensor::Empty(shape);
  FillUniform(t, rng, 1.0f);
  return t;
}

void DisableDropout(std::vector<LayerSpec>& layers) {
  for (LayerSpec& spec : layers) {
    if (spec.type == "dropout") spec.p = 0.0f;
    DisableDropout(spec.body);
    DisableDropout(spec.shortcut);
  }
}

// The linear layers whose input is an image flattened (Strata flattens
// NHWC, PyTorch NCHW, so their weight columns are ordered differently).
json FlattenedImageInputs(Model& model) {
  json out = json::array();
  for (int i = 0; i + 1 < model.num_layers(); ++i) {
    const Shape& in = model.layer(i).input_shape();
    if (std::string(model.layer(i).kind()) != "flatten" || in.rank() != 3) continue;
    for (int j = i + 1; j < model.num_layers(); ++j) {
      if (std::string(model.layer(j).kind()) != "linear") continue;
      out.push_back({{"weight", model.layer(j).parameters()[0]->name}, {"hwc", in.dims()}});
      break;
    }
  }
  return out;
}

// How far beyond PyTorch's own float32 error Strata's may stray from
// float64 on an ill-conditioned model.
constexpr double kIllConditionedFactor = 4.0;

struct Worst {
  double value = 0.0;
  std::string name;
};

// The largest relative difference among the gradients in `relative`.
Worst WorstGradient(const json& relative) {
  Worst w;
  for (const auto& [name, value] : relative.items()) {
    if (name == "output") continue;
    if (value.get<double>() >= w.value) w = {value.get<double>(), name};
  }
  return w;
}

struct ModelResult {
  std::string model;
  json row;
  std::vector<std::string> problems;
};

absl::StatusOr<ModelResult> CheckOne(const std::string& config_path, const ReferenceCheckOptions& o,
                                     const std::string& scratch) {
  STRATA_ASSIGN_OR_RETURN(JobConfig config, LoadJobConfig(config_path));
  DisableDropout(config.model.layers);
  STRATA_ASSIGN_OR_RETURN(auto model,
                          Model::Build(config.model, static_cast<uint64_t>(config.training.seed)));
  std::vector<int64_t> batch_dims = {o.batch};
  for (int64_t d : config.model.input.dims()) batch_dims.push_back(d);
  const Shape batch_shape(batch_dims);
  const Tensor input = Uniform(batch_shape, 11);
  const Tensor output = model->Forward(input, /*training=*/true);
  const Tensor upstream = Uniform(output.shape(), 12);
  const Tensor input_grad = model->Backward(upstream, 0, -1, /*need_input_grad=*/true);

  TensorFileWriter file;
  file.header()["nhwc_flatten"] = FlattenedImageInputs(*model);
  file.Add("input", input);
  file.Add("upstream", upstream);
  file.Add("output", output);
  file.Add("input.grad", input_grad);
  for (Parameter* p : model->parameters()) {
    file.Add(p->name, p->value);
    file.Add(p->name + ".grad", p->grad);
  }
  const std::string tensors = scratch + "/" + config.name + ".tensors";
  const std::string result = scratch + "/" + config.name + ".json";
  STRATA_RETURN_IF_ERROR(file.Write(tensors));

  ProcessSpec spec;
  spec.argv = {o.python,    SourceDir() + "/tools/bench/peers/torch_reference.py",
               "--config",  config_path,
               "--tensors", tensors,
               "--threads", std::to_string(o.threads),
               "--json",    result};
  spec.unset_env = UnsetForBenchmarks();
  spec.set_env = PeerEnvironment(o.threads);
  spec.output_path = scratch + "/" + config.name + ".log";
  STRATA_ASSIGN_OR_RETURN(int code, RunProcess(spec, absl::Minutes(10)));
  if (code != 0) {
    return absl::InternalError(absl::StrCat("the PyTorch reference for ", config_path,
                                            " exited with status ", code, ":\n",
                                            FileTail(spec.output_path, 2000)));
  }
  STRATA_ASSIGN_OR_RETURN(json peer,
                          ReadContenderResult(result, "relative", "pytorch", spec.output_path));
  ModelResult r;
  r.model = config.name;
  const int64_t ours = model->num_parameter_elements();
  const int64_t theirs = peer["parameters"].get<int64_t>();
  r.row = {{"model", config.name},
           {"reference", peer["reference"]},
           {"parameters", {{"strata", ours}, {"pytorch", theirs}}},
           {"relative", peer["relative"]},
           {"relative_to_float64", peer["relative_to_float64"]},
           {"pytorch_float32_to_float64", peer["pytorch_float32_to_float64"]}};
  if (ours != theirs) {
    r.problems.push_back(
        absl::StrCat(config.name, ": ", ours, " parameters, the reference has ", theirs));
  }
  const double output_difference = peer["relative"]["output"].get<double>();
  if (!(output_difference <= o.tolerance)) {
    r.problems.push_back(absl::StrFormat("%s: the output differs by %.2e of its largest magnitude",
                                         config.name, output_difference));
  }
  const Worst strict = WorstGradient(peer["relative"]);
  const Worst exact = WorstGradient(peer["relative_to_float64"]);
  const Worst own = WorstGradient(peer["pytorch_float32_to_float64"]);
  // Where PyTorch's own float32 gradients stray from float64 by more than
  // the tolerance, the model is too ill-conditioned for the tolerance to
  // mean anything there (a pre-activation within rounding of zero flips a
  // ReLU), and Strata is judged against float64 beside PyTorch instead.
  const bool ill_conditioned = own.value > o.tolerance;
  r.row["gradients"] = {{"worst_vs_pytorch", strict.value},
                        {"worst_vs_pytorch_name", strict.name},
                        {"strata_worst_vs_float64", exact.value},
                        {"pytorch_float32_worst_vs_float64", own.value},
                        {"ill_conditioned", ill_conditioned}};
  if (!(strict.value <= o.tolerance) &&
      !(ill_conditioned && exact.value <= kIllConditionedFactor * own.value)) {
    r.problems.push_back(absl::StrFormat(
        "%s: %s differs by %.2e of its largest magnitude (from float64: strata %.2e, pytorch's "
        "float32 %.2e)",
        config.name, strict.name, strict.value, exact.value, own.value));
  }
  std::printf("%-16s %-30s %11lld %11lld %9.1e %9.1e %9.1e %9.1e  %s\n", config.name.c_str(),
              peer["reference"].get<std::string>().c_str(), static_cast<long long>(ours),
              static_cast<long long>(theirs), output_difference, strict.value, exact.value,
              own.value, r.problems.empty() ? "same" : "DIFFERENT");
  std::fflush(stdout);
  return r;
}

}  // namespace

absl::Status RunReferenceCheck(const ReferenceCheckOptions& o) {
  if (o.configs.empty()) {
    return absl::InvalidArgumentError("reference: name the models with --config a.json,b.json");
  }
  if (o.batch < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--batch-size must be >= 1, got ", o.batch));
  }
  STRATA_ASSIGN_OR_RETURN(const ScratchDirectory scratch,
                          ScratchDirectory::Make("strata_reference"));
  if (!PythonHasTorch(o.python, scratch.path())) {
    return absl::FailedPreconditionError(
        absl::StrCat(o.python, " cannot import torch (tools/setup.sh --bench installs it)"));
  }
  SetCpuThreads(o.threads);
  std::printf(
      "Strata against the reference definitions: batch %lld, training-mode forward and backward, "
      "dropout off.\nA difference is the largest |a - b| over the tensor's largest |value| "
      "(tolerance %.0e); grads: the worst of dL/dx and every dL/dw,\nagainst PyTorch float32 and "
      "against PyTorch float64 (Strata's, and PyTorch float32's own).\n",
      static_cast<long long>(o.batch), o.tolerance);
  std::printf("%-16s %-30s %11s %11s %9s %9s %9s %9s\n", "model", "reference", "params", "ref",
              "output", "grads", "s vs f64", "pt vs f64");
  json rows = json::array();
  std::vector<std::string> problems;
  for (const std::string& config : o.configs) {
    STRATA_ASSIGN_OR_RETURN(const ModelResult r, CheckOne(config, o, scratch.path()));
    rows.push_back(r.row);
    problems.insert(problems.end(), r.problems.begin(), r.problems.end());
  }
  if (!o.json_out.empty()) {
    STRATA_RETURN_IF_ERROR(WriteJsonFile(
        o.json_out, {{"batch", o.batch}, {"tolerance", o.tolerance}, {"models", rows}}));
  }
  if (!problems.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "Strata does not compute what the reference does: ", absl::StrJoin(problems, "; ")));
  }
  std::vector<std::string> ill;
  for (const json& row : rows) {
    if (row["gradients"]["ill_conditioned"].get<bool>()) ill.push_back(row["model"]);
  }
  std::printf("same computation: every output within %.0e; every gradient too%s\n", o.tolerance,
              ill.empty() ? ""
                          : absl::StrCat(", except on ", absl::StrJoin(ill, ", "),
                                         ", whose gradients are as close to float64 as PyTorch's "
                                         "own float32 ones (within ",
                                         kIllConditionedFactor, "x)")
                                .c_str());
  return absl::OkStatus();
}

}  // namespace strata::bench
