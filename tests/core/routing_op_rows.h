// The op table's rows for the Mixture-of-Experts routing ops
// (core/ops/backend.h): the gate and its backward, the ranking of choices
// (in order and batch-prioritised), the load statistics, dispatch and
// combine, each against a reference written from the op's definition.
#ifndef STRATA_TESTS_CORE_ROUTING_OP_ROWS_H_
#define STRATA_TESTS_CORE_ROUTING_OP_ROWS_H_

#include <vector>

#include "tests/core/op_table.h"

namespace strata::testing {

std::vector<OpRow> RoutingRows();

}  // namespace strata::testing

#endif  // STRATA_TESTS_CORE_ROUTING_OP_ROWS_H_
