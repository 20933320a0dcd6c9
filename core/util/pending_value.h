// PendingValue<T>: a value that may not exist yet. It is either ready (a
// number the host computed) or made on the first Get() by a function that
// may wait for it (a device's result whose copy to the host is in flight),
// so that whoever produces a value need not wait for it and whoever needs
// it waits only then.
//
//   PendingValue<double> loss = ...;       // from a device, not waited for
//   ... queue more work ...
//   STRATA_ASSIGN_OR_RETURN(double value, loss.Get());  // waits here, once
//
// Get() runs the function once and keeps its outcome, value or error;
// copies share it. Not thread-safe: one thread gets a value.
#ifndef STRATA_CORE_UTIL_PENDING_VALUE_H_
#define STRATA_CORE_UTIL_PENDING_VALUE_H_

#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/status/statusor.h"

namespace strata {

template <typename T>
class PendingValue {
 public:
  using Wait = std::function<absl::StatusOr<T>()>;

  // No value: has_value() is false and Get() fails.
  PendingValue() = default;
  // Ready at once.
  PendingValue(T value)  // NOLINT(google-explicit-constructor): a value is a pending value
      : state_(std::make_shared<State>()) {
    state_->outcome.emplace(std::move(value));
  }
  // Made by `wait` when first asked for.
  explicit PendingValue(Wait wait) : state_(std::make_shared<State>()) {
    state_->wait = std::move(wait);
  }

  bool has_value() const { return state_ != nullptr; }

  // A pending value made from this one by `f` (const T& -> U) when first
  // asked for; this one's error passes through. Getting it gets this one.
  template <typename F>
  auto Then(F f) const -> PendingValue<std::invoke_result_t<F, const T&>> {
    using U = std::invoke_result_t<F, const T&>;
    return PendingValue<U>(
        typename PendingValue<U>::Wait([from = *this, f = std::move(f)]() -> absl::StatusOr<U> {
          const absl::StatusOr<T>& value = from.Get();
          if (!value.ok()) return value.status();
          return f(*value);
        }));
  }

  const absl::StatusOr<T>& Get() const {
    if (state_ == nullptr) {
      static const absl::StatusOr<T>* const kNone =
          new absl::StatusOr<T>(absl::FailedPreconditionError("no value was set"));
      return *kNone;
    }
    if (!state_->outcome.has_value()) {
      state_->outcome.emplace(state_->wait());
      state_->wait = nullptr;  // what it held (a device's buffer) goes now
    }
    return *state_->outcome;
  }

 private:
  struct State {
    Wait wait;
    std::optional<absl::StatusOr<T>> outcome;
  };
  std::shared_ptr<State> state_;
};

}  // namespace strata

#endif  // STRATA_CORE_UTIL_PENDING_VALUE_H_
