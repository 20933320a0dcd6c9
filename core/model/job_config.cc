#include "core/model/job_config.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/model/batch_shares.h"
#include "core/model/fc_batching.h"
#include "core/model/layer_registry.h"
#include "core/ops/backend.h"
#include "core/status.h"
#include "core/util/json_reader.h"

namespace strata {
namespace {

using nlohmann::json;

absl::Status Positive(int64_t value, const std::string& path) {
  if (value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(path, ": must be > 0, got ", value));
}

// Every layer's name, nested ones included, must be unique in the model.
absl::Status CheckUniqueNames(const std::vector<LayerSpec>& layers, std::set<std::string>* names) {
  for (const LayerSpec& spec : layers) {
    if (!names->insert(spec.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(spec.path, ".name: duplicate layer name \"", spec.name, "\""));
    }
    STRATA_RETURN_IF_ERROR(CheckUniqueNames(spec.body, names));
    STRATA_RETURN_IF_ERROR(CheckUniqueNames(spec.shortcut, names));
  }
  return absl::OkStatus();
}

absl::Status ParseModel(const json& j, ModelConfig* model) {
  JsonObjectReader r(j, "model");
  std::vector<int64_t> input;
  STRATA_RETURN_IF_ERROR(r.Required("input", &input));
  if (input.size() != 3 && input.size() != 1) {
    return absl::InvalidArgumentError(
        "model.input: expected [H, W, C] for images or [F] for vectors");
  }
  for (size_t i = 0; i < input.size(); ++i) {
    STRATA_RETURN_IF_ERROR(Positive(input[i], absl::StrCat("model.input[", i, "]")));
  }
  model->input = Shape(input);
  STRATA_RETURN_IF_ERROR(r.Required("classes", &model->classes));
  STRATA_RETURN_IF_ERROR(Positive(model->classes, "model.classes"));
  STRATA_RETURN_IF_ERROR(r.Optional("split_after", &model->split_after));
  STRATA_ASSIGN_OR_RETURN(const json* layers, r.Child("layers"));
  if (!layers->is_array() || layers->empty()) {
    return absl::InvalidArgumentError("model.layers: expected a non-empty array of layers");
  }
  STRATA_ASSIGN_OR_RETURN(model->layers, ParseLayerList(*layers, "model.layers", ""));
  std::set<std::string> names;
  STRATA_RETURN_IF_ERROR(CheckUniqueNames(model->layers, &names));
  model->split_index = static_cast<int>(model->layers.size());
  if (!model->split_after.empty()) {
    bool found = false;
    for (size_t i = 0; i < model->layers.size(); ++i) {
      if (model->layers[i].name == model->split_after) {
        model->split_index = static_cast<int>(i) + 1;
        found = true;
      }
    }
    if (!found && names.count(model->split_after) > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model.split_after: \"", model->split_after,
          "\" is inside a residual block; the split must be after a layer of model.layers"));
    }
    if (!found) {
      return absl::InvalidArgumentError(
          absl::StrCat("model.split_after: no layer is named \"", model->split_after, "\""));
    }
    if (model->split_index == static_cast<int>(model->layers.size())) {
      return absl::InvalidArgumentError(
          "model.split_after: the split must leave at least one layer in the head");
    }
  }
  return r.Finish();
}

absl::Status ParseData(const json& j, DataConfig* data) {
  JsonObjectReader r(j, "data");
  STRATA_RETURN_IF_ERROR(r.Required("dataset", &data->dataset));
  const std::set<std::string> known = {"fashion_mnist", "mnist", "cifar10", "synthetic"};
  if (known.count(data->dataset) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("data.dataset: unknown data set \"", data->dataset,
                     "\" (use fashion_mnist, mnist, cifar10 or synthetic)"));
  }
  if (data->dataset == "synthetic") {
    data->train_size = 60000;
    data->synthetic_test = 10000;
    STRATA_RETURN_IF_ERROR(r.Optional("test_size", &data->synthetic_test));
    STRATA_RETURN_IF_ERROR(Positive(data->synthetic_test, "data.test_size"));
  } else {
    STRATA_RETURN_IF_ERROR(r.Required("path", &data->path));
  }
  if (r.Has("train_size")) {
    STRATA_RETURN_IF_ERROR(r.Optional("train_size", &data->train_size));
    STRATA_RETURN_IF_ERROR(Positive(data->train_size, "data.train_size"));
  }
  STRATA_RETURN_IF_ERROR(r.Optional("mean", &data->mean));
  STRATA_RETURN_IF_ERROR(r.Optional("std", &data->std));
  for (size_t i = 0; i < data->std.size(); ++i) {
    if (!(data->std[i] > 0.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("data.std[", i, "]: must be > 0, got ", data->std[i]));
    }
  }
  if (data->mean.size() != data->std.size()) {
    return absl::InvalidArgumentError(absl::StrCat("data.mean has ", data->mean.size(),
                                                   " values but data.std has ", data->std.size()));
  }
  if (r.Has("augment")) {
    STRATA_ASSIGN_OR_RETURN(const json* augment, r.Child("augment"));
    JsonObjectReader a(*augment, "data.augment");
    STRATA_RETURN_IF_ERROR(a.Optional("crop_padding", &data->augment.crop_padding));
    STRATA_RETURN_IF_ERROR(a.Optional("horizontal_flip", &data->augment.horizontal_flip));
    if (data->augment.crop_padding < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data.augment.crop_padding: must be >= 0, got ", data->augment.crop_padding));
    }
    STRATA_RETURN_IF_ERROR(a.Finish());
  }
  return r.Finish();
}

absl::Status ParseOptimizer(const json& j, OptimizerConfig* o) {
  JsonObjectReader r(j, "optimizer");
  STRATA_RETURN_IF_ERROR(r.Required("type", &o->type));
  STRATA_RETURN_IF_ERROR(r.Required("lr", &o->lr));
  STRATA_RETURN_IF_ERROR(r.Optional("momentum", &o->momentum));
  STRATA_RETURN_IF_ERROR(r.Optional("nesterov", &o->nesterov));
  STRATA_RETURN_IF_ERROR(r.Optional("weight_decay", &o->weight_decay));
  STRATA_RETURN_IF_ERROR(r.Optional("beta1", &o->beta1));
  STRATA_RETURN_IF_ERROR(r.Optional("beta2", &o->beta2));
  STRATA_RETURN_IF_ERROR(r.Optional("epsilon", &o->epsilon));
  STRATA_RETURN_IF_ERROR(r.Finish());
  // Range checks live with the optimizer; run them now so errors come early.
  return Optimizer::Create(*o).status();
}

absl::Status ParseSchedule(const json& j, LrScheduleConfig* s) {
  JsonObjectReader r(j, "schedule");
  STRATA_RETURN_IF_ERROR(r.Required("type", &s->type));
  STRATA_RETURN_IF_ERROR(r.Optional("warmup_steps", &s->warmup_steps));
  STRATA_RETURN_IF_ERROR(r.Optional("step_size", &s->step_size));
  STRATA_RETURN_IF_ERROR(r.Optional("gamma", &s->gamma));
  STRATA_RETURN_IF_ERROR(r.Optional("min_lr", &s->min_lr));
  STRATA_RETURN_IF_ERROR(r.Finish());
  return ValidateLrSchedule(*s);
}

absl::Status ParseTraining(const json& j, TrainingConfig* t) {
  JsonObjectReader r(j, "training");
  STRATA_RETURN_IF_ERROR(r.Optional("batch_size", &t->batch_size));
  STRATA_RETURN_IF_ERROR(r.Optional("epochs", &t->epochs));
  STRATA_RETURN_IF_ERROR(r.Optional("max_steps", &t->max_steps));
  STRATA_RETURN_IF_ERROR(r.Optional("seed", &t->seed));
  STRATA_RETURN_IF_ERROR(r.Optional("threads", &t->threads));
  STRATA_RETURN_IF_ERROR(r.Optional("log_every", &t->log_every));
  STRATA_RETURN_IF_ERROR(r.Optional("evaluate", &t->evaluate));
  STRATA_RETURN_IF_ERROR(r.Optional("device", &t->device));
  STRATA_RETURN_IF_ERROR(r.Optional("tf32", &t->tf32));
  if (absl::Status device = ParseDeviceSpec(t->device).status(); !device.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("training.device: ", device.message()));
  }
  STRATA_RETURN_IF_ERROR(Positive(t->batch_size, "training.batch_size"));
  STRATA_RETURN_IF_ERROR(Positive(t->epochs, "training.epochs"));
  STRATA_RETURN_IF_ERROR(Positive(t->log_every, "training.log_every"));
  if (t->max_steps < 0 || t->threads < 0) {
    return absl::InvalidArgumentError("training.max_steps and training.threads must be >= 0");
  }
  return r.Finish();
}

absl::Status ParseCluster(const json& j, ClusterConfig* c) {
  JsonObjectReader r(j, "cluster");
  STRATA_RETURN_IF_ERROR(r.Optional("mode", &c->mode));
  STRATA_RETURN_IF_ERROR(r.Optional("servers", &c->servers));
  STRATA_RETURN_IF_ERROR(r.Optional("conv_workers", &c->conv_workers));
  STRATA_RETURN_IF_ERROR(r.Optional("fc_workers", &c->fc_workers));
  STRATA_RETURN_IF_ERROR(r.Optional("wire_format", &c->wire_format));
  if (c->wire_format != "fp32" && c->wire_format != "bf16") {
    return absl::InvalidArgumentError(absl::StrCat("cluster.wire_format: unknown format \"",
                                                   c->wire_format, "\" (use fp32 or bf16)"));
  }
  STRATA_RETURN_IF_ERROR(r.Optional("batch_shares", &c->batch_shares));
  {
    absl::StatusOr<BatchShares> shares = BatchShares::Parse(c->batch_shares);
    if (!shares.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster.batch_shares: ", shares.status().message()));
    }
  }
  STRATA_RETURN_IF_ERROR(r.Optional("fc_batching", &c->fc_batching));
  if (absl::StatusOr<FcBatching> batching = ParseFcBatching(c->fc_batching); !batching.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster.fc_batching: ", batching.status().message()));
  }
  if (c->mode != "single" && c->mode != "ps" && c->mode != "stanza") {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster.mode: unknown mode \"", c->mode, "\" (use single, ps or stanza)"));
  }
  STRATA_RETURN_IF_ERROR(Positive(c->servers, "cluster.servers"));
  STRATA_RETURN_IF_ERROR(Positive(c->conv_workers, "cluster.conv_workers"));
  STRATA_RETURN_IF_ERROR(Positive(c->fc_workers, "cluster.fc_workers"));
  return r.Finish();
}

absl::StatusOr<JobConfig> ParseTopLevel(const json& j) {
  JsonObjectReader r(j, "");
  JobConfig config;
  STRATA_RETURN_IF_ERROR(r.Optional("name", &config.name));
  STRATA_ASSIGN_OR_RETURN(const json* data, r.Child("data"));
  STRATA_RETURN_IF_ERROR(ParseData(*data, &config.data));
  STRATA_ASSIGN_OR_RETURN(const json* model, r.Child("model"));
  STRATA_RETURN_IF_ERROR(ParseModel(*model, &config.model));
  STRATA_ASSIGN_OR_RETURN(const json* optimizer, r.Child("optimizer"));
  STRATA_RETURN_IF_ERROR(ParseOptimizer(*optimizer, &config.optimizer));
  if (r.Has("schedule")) {
    STRATA_ASSIGN_OR_RETURN(const json* schedule, r.Child("schedule"));
    STRATA_RETURN_IF_ERROR(ParseSchedule(*schedule, &config.schedule));
  }
  if (r.Has("training")) {
    STRATA_ASSIGN_OR_RETURN(const json* training, r.Child("training"));
    STRATA_RETURN_IF_ERROR(ParseTraining(*training, &config.training));
  }
  if (r.Has("cluster")) {
    STRATA_ASSIGN_OR_RETURN(const json* cluster, r.Child("cluster"));
    STRATA_RETURN_IF_ERROR(ParseCluster(*cluster, &config.cluster));
  }
  STRATA_RETURN_IF_ERROR(r.Finish());
  const Shape& input = config.model.input;
  if (config.data.augment.enabled() && input.rank() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data.augment: crops and flips need images [H, W, C]; model.input is ", input.ToString()));
  }
  if (input.rank() == 3 && config.data.augment.crop_padding >= std::min(input[0], input[1])) {
    return absl::InvalidArgumentError(
        absl::StrCat("data.augment.crop_padding: ", config.data.augment.crop_padding,
                     " is not smaller than the image (", input.ToString(), ")"));
  }
  const size_t channels = static_cast<size_t>(config.model.input.dims().back());
  for (const auto* values : {&config.data.mean, &config.data.std}) {
    if (values->size() > 1 && values->size() != channels) {
      return absl::InvalidArgumentError(absl::StrCat("data.mean/std: ", values->size(),
                                                     " values for ", channels, " input channels"));
    }
  }
  return config;
}

}  // namespace

absl::StatusOr<JobConfig> ParseJobConfig(const std::string& text, const std::string& source) {
  STRATA_ASSIGN_OR_RETURN(json j, ParseJson(text, source));
  absl::StatusOr<JobConfig> config = ParseTopLevel(j);
  if (!config.ok()) return WithContext(config.status(), source);
  config->source = source;
  config->text = j.dump();
  return config;
}

absl::StatusOr<JobConfig> LoadJobConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open job config ", path));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseJobConfig(buffer.str(), path);
}

}  // namespace strata
