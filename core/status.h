// Error-propagation helpers on top of absl::Status.
//
// Abseil 20220623 has no RETURN_IF_ERROR / ASSIGN_OR_RETURN, so Strata keeps
// its own. Each hop may add context so an error read by a user carries the
// trail of where it passed ("loading config x.json: model.layers[3]: ...").
//
//   absl::StatusOr<Model> LoadModel(const std::string& path) {
//     STRATA_ASSIGN_OR_RETURN(auto config, ReadConfig(path));
//     STRATA_RETURN_IF_ERROR(config.Validate());
//     ...
//   }
#ifndef STRATA_CORE_STATUS_H_
#define STRATA_CORE_STATUS_H_

#include <cstdio>
#include <cstdlib>
#include <utility>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace strata {

// Returns `status` with "`context`: " put in front of its message; OK stays OK.
inline absl::Status WithContext(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

namespace internal_status {
inline const absl::Status& AsStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& AsStatus(const absl::StatusOr<T>& s) {
  return s.status();
}
}  // namespace internal_status

}  // namespace strata

#define STRATA_STATUS_CONCAT_INNER_(a, b) a##b
#define STRATA_STATUS_CONCAT_(a, b) STRATA_STATUS_CONCAT_INNER_(a, b)

// Returns from the calling function when `expr` (a Status) is not OK.
#define STRATA_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    absl::Status strata_status_ = (expr);            \
    if (!strata_status_.ok()) return strata_status_; \
  } while (0)

// Like STRATA_RETURN_IF_ERROR, adding `context` in front of the message.
#define STRATA_RETURN_IF_ERROR_CTX(expr, context)                                      \
  do {                                                                                 \
    absl::Status strata_status_ = (expr);                                              \
    if (!strata_status_.ok()) return ::strata::WithContext(strata_status_, (context)); \
  } while (0)

// `lhs = value of expr` when `expr` (a StatusOr) is OK; returns its error otherwise.
#define STRATA_ASSIGN_OR_RETURN(lhs, expr) \
  STRATA_ASSIGN_OR_RETURN_IMPL_(STRATA_STATUS_CONCAT_(strata_statusor_, __LINE__), lhs, expr, "")

#define STRATA_ASSIGN_OR_RETURN_CTX(lhs, expr, context)                                       \
  STRATA_ASSIGN_OR_RETURN_IMPL_(STRATA_STATUS_CONCAT_(strata_statusor_, __LINE__), lhs, expr, \
                                context)

// `tmp` is a generated name and `lhs` may be a declaration ("auto x"), so
// neither can be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define STRATA_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr, context) \
  auto tmp = (expr);                                           \
  if (!tmp.ok()) {                                             \
    absl::string_view strata_ctx_ = (context);                 \
    if (strata_ctx_.empty()) return tmp.status();              \
    return ::strata::WithContext(tmp.status(), strata_ctx_);   \
  }                                                            \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)

// Programmer-error check: aborts with file:line and the message. Never use it
// for anything that comes from a file, a flag or the network.
#define STRATA_CHECK(cond, ...)                                                       \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "%s:%d: check failed: %s %s\n", __FILE__, __LINE__, #cond, \
                   absl::StrCat(__VA_ARGS__).c_str());                                \
      std::abort();                                                                   \
    }                                                                                 \
  } while (0)

// Programmer-error check that `expr`, an absl::Status, is OK (a call whose
// operands were checked when they were made): aborts with its message.
#define STRATA_CHECK_OK(expr)                                                 \
  do {                                                                        \
    const absl::Status strata_check_status_ = (expr);                         \
    STRATA_CHECK(strata_check_status_.ok(), strata_check_status_.ToString()); \
  } while (0)

#endif  // STRATA_CORE_STATUS_H_
