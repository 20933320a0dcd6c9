#include "scheduler/crossover.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/control/knobs.h"
#include "core/status.h"
#include "core/util/clock.h"

namespace strata {

absl::StatusOr<SharingPolicy> ParseSharingPolicy(std::string_view name) {
  if (name == "exclusive") return SharingPolicy::kExclusive;
  if (name == "naive") return SharingPolicy::kNaive;
  if (name == "crossover") return SharingPolicy::kCrossover;
  return absl::InvalidArgumentError(absl::StrCat("unknown sharing policy '", std::string(name),
                                                 "' (exclusive, naive or crossover)"));
}

absl::StatusOr<std::vector<double>> ParseDeviceWeights(std::string_view list, size_t jobs) {
  std::vector<double> weights(jobs, 1.0);
  if (list.empty()) return weights;
  const std::vector<std::string> parts = absl::StrSplit(std::string(list), ',');
  if (parts.size() != jobs) {
    return absl::InvalidArgumentError(
        absl::StrCat("--weights has ", parts.size(), " values for ", jobs, " jobs"));
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!absl::SimpleAtod(parts[i], &weights[i]) || !(weights[i] > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--weights: '", parts[i], "' is not a positive number"));
    }
  }
  return weights;
}

const char* SharingPolicyName(SharingPolicy policy) {
  switch (policy) {
    case SharingPolicy::kExclusive:
      return "exclusive";
    case SharingPolicy::kNaive:
      return "naive";
    case SharingPolicy::kCrossover:
      return "crossover";
  }
  return "?";
}

size_t PickTokenHolder(const std::vector<TokenCandidate>& waiting) {
  const bool weighted = std::any_of(waiting.begin(), waiting.end(), [&](const TokenCandidate& c) {
    return c.weight != waiting.front().weight;
  });
  size_t best = 0;
  for (size_t i = 1; i < waiting.size(); ++i) {
    const TokenCandidate& c = waiting[i];
    const TokenCandidate& b = waiting[best];
    if (weighted) {
      const double mine = c.held_seconds / c.weight, theirs = b.held_seconds / b.weight;
      if (mine < theirs || (mine == theirs && c.waiting_since < b.waiting_since)) best = i;
    } else if (c.waiting_since < b.waiting_since) {
      best = i;
    }
  }
  return best;
}

class DeviceArbiter::JobDevice final : public DevicePolicy {
 public:
  JobDevice(DeviceArbiter* arbiter, int job) : arbiter_(arbiter), job_(job) {}
  ~JobDevice() override { arbiter_->Leave(job_); }
  void Acquire() override { arbiter_->Acquire(job_); }
  void Release() override { arbiter_->Release(job_); }
  void IterationEnds() override { arbiter_->IterationEnds(job_); }
  bool ShouldYield() override { return arbiter_->ShouldYield(job_); }
  bool TakesTurns() const override { return arbiter_->policy() == SharingPolicy::kCrossover; }
  void SetTakesTurns(bool on) override { arbiter_->SetTakesTurns(job_, on); }

 private:
  DeviceArbiter* arbiter_;
  int job_;
};

DeviceArbiter::DeviceArbiter(SharingPolicy policy, std::vector<DeviceShare> jobs, Clock clock)
    : policy_(policy), clock_(clock ? std::move(clock) : Clock(MonotonicSeconds)) {
  for (DeviceShare& share : jobs) {
    STRATA_CHECK(share.weight > 0,
                 absl::StrCat("job ", share.job, ": a device share's weight must be > 0"));
    JobState state;
    state.usage.job = share.job;
    state.share = std::move(share);
    jobs_.push_back(std::move(state));
  }
  for (const JobState& j : jobs_) weighted_ = weighted_ || j.share.weight != jobs_[0].share.weight;
}

std::unique_ptr<DevicePolicy> DeviceArbiter::ForJob(int job) {
  STRATA_CHECK(job >= 0 && job < static_cast<int>(jobs_.size()),
               absl::StrCat("no job ", job, " among ", jobs_.size()));
  return std::make_unique<JobDevice>(this, job);
}

std::vector<DeviceArbiter::Usage> DeviceArbiter::usage() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Usage> out;
  for (const JobState& j : jobs_) out.push_back(j.usage);
  return out;
}

bool DeviceArbiter::Waiting(int job) const {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_[job].waiting;
}

bool DeviceArbiter::MayTake(int job) const {
  switch (policy_) {
    case SharingPolicy::kNaive:
      return true;
    case SharingPolicy::kExclusive:
      return holder_ == -1 && turn_ == job;
    case SharingPolicy::kCrossover: {
      if (holder_ != -1) return false;
      std::vector<TokenCandidate> waiting;
      for (size_t i = 0; i < jobs_.size(); ++i) {
        const JobState& j = jobs_[i];
        if (j.waiting) {
          waiting.push_back({static_cast<int>(i), j.waiting_since,
                             j.counted_per_weight * j.share.weight, j.share.weight});
        }
      }
      return !waiting.empty() && waiting[PickTokenHolder(waiting)].job == job;
    }
  }
  return false;
}

void DeviceArbiter::Take(int job) {
  JobState& j = jobs_[job];
  if (Granted(j)) holder_ = job;
  j.held_since = clock_();
  ++j.usage.grants;
  const bool others_wait = std::any_of(jobs_.begin(), jobs_.end(), [&j](const JobState& other) {
    return other.waiting && &other != &j;
  });
  j.contested_since =
      others_wait && policy_ == SharingPolicy::kCrossover && Granted(j) ? j.held_since : -1;
}

double DeviceArbiter::CountedNow(const JobState& j) const {
  const double contested = j.contested_since >= 0 ? clock_() - j.contested_since : 0.0;
  return j.counted_per_weight + contested / j.share.weight;
}

void DeviceArbiter::GiveBack(int job) {
  JobState& j = jobs_[job];
  j.usage.held_seconds += clock_() - j.held_since;
  j.counted_per_weight = CountedNow(j);
  j.contested_since = -1;
  if (holder_ == job) holder_ = -1;
}

int DeviceArbiter::NextTurn(int job) const {
  const int n = static_cast<int>(jobs_.size());
  for (int k = 1; k <= n; ++k) {
    const int candidate = (job + k) % n;
    if (jobs_[candidate].active) return candidate;
  }
  return -1;
}

void DeviceArbiter::Acquire(int job) {
  std::unique_lock<std::mutex> lock(mu_);
  // Exclusive: the device stays the job's until its iteration ends.
  if (policy_ == SharingPolicy::kExclusive && holder_ == job) return;
  JobState& j = jobs_[job];
  if (!Granted(j)) {  // naive, or a job out of crossover's turns
    Take(job);
    return;
  }
  // From now on the holder's time is contested.
  if (policy_ == SharingPolicy::kCrossover && holder_ >= 0 && holder_ != job &&
      jobs_[holder_].contested_since < 0) {
    jobs_[holder_].contested_since = clock_();
  }
  j.waiting = true;
  j.waiting_since = ++arrivals_;
  changed_.wait(lock, [&] { return MayTake(job); });
  j.waiting = false;
  Take(job);
}

void DeviceArbiter::Release(int job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (policy_ == SharingPolicy::kExclusive) return;
  if (Granted(jobs_[job]) && holder_ != job) return;
  GiveBack(job);
  changed_.notify_all();
}

void DeviceArbiter::SetTakesTurns(int job, bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  if (policy_ != SharingPolicy::kCrossover) return;
  JobState& j = jobs_[job];
  if (j.takes_turns == on) return;
  if (holder_ == job) GiveBack(job);  // not held between iterations; kept safe
  j.takes_turns = on;
  changed_.notify_all();
}

void DeviceArbiter::IterationEnds(int job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (policy_ != SharingPolicy::kExclusive || holder_ != job) return;
  GiveBack(job);
  turn_ = NextTurn(job);
  changed_.notify_all();
}

bool DeviceArbiter::ShouldYield(int job) const {
  if (policy_ != SharingPolicy::kCrossover || !weighted_) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (holder_ != job) return false;
  const double mine = CountedNow(jobs_[job]);
  for (const JobState& other : jobs_) {
    if (other.waiting && other.counted_per_weight < mine) return true;
  }
  return false;
}

void DeviceArbiter::Leave(int job) {
  std::lock_guard<std::mutex> lock(mu_);
  JobState& j = jobs_[job];
  j.active = false;
  if (holder_ == job) GiveBack(job);
  if (policy_ == SharingPolicy::kExclusive && turn_ == job) turn_ = NextTurn(job);
  changed_.notify_all();
}

void RegisterDeviceSharingKnob() {
  KnobCatalog::Global().RegisterIfNew(KnobSpec(
      kDeviceSharingKnob,
      "where jobs share a worker under crossover, how this one computes: crossover (in turns, "
      "giving the cores up at every wait) or naive (whenever it likes, contending for them)",
      /*alters_math=*/false, [](const std::string& value) {
        return value == "crossover" || value == "naive"
                   ? absl::OkStatus()
                   : absl::InvalidArgumentError("device sharing is crossover or naive");
      }));
}

}  // namespace strata
