// The coordinator's relay of iteration reports to a job's controller: what
// each process reports reaches every process that wants reports, once, in
// order; nobody reports for another; a resent request adds nothing.
#include "server/report_relay.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

const Peer kConv0{wire::Role::CONV_WORKER, 0};
const Peer kConv1{wire::Role::CONV_WORKER, 1};
const Peer kFc0{wire::Role::FC_WORKER, 0};

IterationReport Report(const Peer& who, int64_t iteration, double compute) {
  IterationReport r;
  r.role = who.role;
  r.rank = who.rank;
  r.record.iteration = iteration;
  r.record.compute_seconds = compute;
  return r;
}

TEST(ReportRelayTest, WhatEachProcessReportsReachesTheControllerOnceInOrder) {
  ReportRelay relay;
  relay.Add(kConv1, {Report(kConv1, 0, 0.5)});  // nobody wants reports yet: dropped
  EXPECT_FALSE(relay.wanted());
  relay.Want(kConv0);
  EXPECT_TRUE(relay.wanted());
  relay.Add(kConv1, {Report(kConv1, 1, 0.6), Report(kConv1, 2, 0.7)});
  relay.Add(kFc0, {Report(kFc0, 1, 0.1)});
  relay.Add(kConv0, {Report(kConv0, 1, 0.2)});  // its own: it has them
  relay.Add(kConv1, {Report(kConv1, 2, 9.0)});  // a resent request: already relayed
  relay.Add(kConv1, {Report(kConv0, 3, 9.0)});  // for another process: refused
  const std::vector<IterationReport> got = relay.TakeFor(kConv0);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].rank, 1);
  EXPECT_EQ(got[0].record.iteration, 1);
  EXPECT_EQ(got[1].record.compute_seconds, 0.7);
  EXPECT_EQ(got[2].role, wire::Role::FC_WORKER);
  EXPECT_TRUE(relay.TakeFor(kConv0).empty());
  EXPECT_TRUE(relay.TakeFor(kConv1).empty());  // it did not ask
}

TEST(ReportRelayTest, AControllerThatDoesNotAskForAWhileKeepsTheNewestReports) {
  ReportRelay relay;
  relay.Want(kConv0);
  for (int64_t i = 0; i < static_cast<int64_t>(kMaxReportsPerMessage) + 10; ++i) {
    relay.Add(kConv1, {Report(kConv1, i, 0.5)});
  }
  const std::vector<IterationReport> got = relay.TakeFor(kConv0);
  ASSERT_EQ(got.size(), kMaxReportsPerMessage);
  EXPECT_EQ(got.front().record.iteration, 10);
}

}  // namespace
}  // namespace strata
