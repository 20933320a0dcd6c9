#include "tools/fit/fit_inputs.h"

#include "absl/strings/str_cat.h"

namespace strata::fit {

nlohmann::json FitInputs::ToJson() const {
  nlohmann::json j = {{"knob", knob},
                      {"mode", mode},
                      {"batch", batch},
                      {"conv_workers", conv_workers},
                      {"cost_samples", nlohmann::json::array()},
                      {"link_runs", nlohmann::json::array()},
                      {"speed_runs", nlohmann::json::object()}};
  for (const secbad::CostSample& s : cost_samples) {
    j["cost_samples"].push_back({{"value", s.value},
                                 {"rate_gbit", s.rate_gbit},
                                 {"local_seconds", s.local_seconds},
                                 {"communication_seconds", s.communication_seconds}});
  }
  for (const secbad::LinkRateRun& run : link_runs) {
    j["link_runs"].push_back(
        {{"value", run.value}, {"communication_seconds", run.communication_seconds}});
  }
  for (const auto& [value, runs] : speed_runs) {
    nlohmann::json& of_value = j["speed_runs"][value] = nlohmann::json::array();
    for (const std::vector<secbad::SpeedSample>& run : runs) {
      nlohmann::json iterations = nlohmann::json::array();
      for (const secbad::SpeedSample& s : run) {
        iterations.push_back({{"compute_seconds", s.compute_seconds},
                              {"rows", s.rows},
                              {"wall_seconds", s.wall_seconds}});
      }
      of_value.push_back(iterations);
    }
  }
  return j;
}

absl::StatusOr<FitInputs> FitInputs::FromJson(const nlohmann::json& j) {
  // nlohmann's at() and get() throw on a missing field or another type;
  // their message names the field or the type.
  try {
    FitInputs in;
    in.knob = j.at("knob").get<std::string>();
    in.mode = j.at("mode").get<std::string>();
    in.batch = j.at("batch").get<int64_t>();
    in.conv_workers = j.at("conv_workers").get<int>();
    for (const nlohmann::json& s : j.at("cost_samples")) {
      in.cost_samples.push_back({s.at("value").get<std::string>(), s.at("rate_gbit").get<double>(),
                                 s.at("local_seconds").get<double>(),
                                 s.at("communication_seconds").get<double>()});
    }
    for (const nlohmann::json& run : j.at("link_runs")) {
      in.link_runs.push_back({run.at("value").get<std::string>(),
                              run.at("communication_seconds").get<std::vector<double>>()});
    }
    for (const auto& [value, runs] : j.at("speed_runs").items()) {
      std::vector<std::vector<secbad::SpeedSample>>& of_value = in.speed_runs[value];
      for (const nlohmann::json& run : runs) {
        std::vector<secbad::SpeedSample>& samples = of_value.emplace_back();
        for (const nlohmann::json& s : run) {
          samples.push_back({s.at("compute_seconds").get<std::vector<double>>(),
                             s.at("rows").get<std::vector<int64_t>>(),
                             s.at("wall_seconds").get<double>()});
        }
      }
    }
    return in;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("fit inputs: ", e.what()));
  }
}

}  // namespace strata::fit
