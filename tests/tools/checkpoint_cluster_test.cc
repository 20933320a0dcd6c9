// A damaged or missing file is never a different model: coordinated
// checkpoint epochs (core/train/checkpoint_epochs.h) on real clusters.
//
//   * one flipped byte in the newest epoch: the restore falls back to the
//     epoch before, says which part and why, and ends where a run restored
//     from that epoch ends; with no epoch that verifies, it stops naming
//     each;
//   * a server and an FC worker that cannot see the newest manifest restore
//     the epoch the coordinator chose all the same: one epoch everywhere;
//   * a part that cannot be written keeps its epoch incomplete, and the
//     coordinator says so; in the final epoch it fails the job;
//   * the epoch of the last iteration is complete when the job reports
//     success.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/train/checkpoint_epochs.h"
#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using testing::kBin;
using testing::kConfig;
using testing::Process;
using testing::RunCommand;

class CheckpointClusterTest : public testing::ClusterTest {
 protected:
  // strata_launch of a stanza job of `steps` steps (2 servers, 2 conv
  // workers, 1 FC worker, which owns the head: every role has a part),
  // checkpointing every 20 iterations into `dir`, then `extra`.
  std::vector<std::string> Launch(int steps, const std::string& dir,
                                  const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {kBin + "strata_launch",
                                     "--config",
                                     kConfig,
                                     "--mode",
                                     "stanza",
                                     "--servers",
                                     "2",
                                     "--conv-workers",
                                     "2",
                                     "--fc-workers",
                                     "1",
                                     "--max-steps",
                                     std::to_string(steps),
                                     "--evaluate=false",
                                     "--progress=false",
                                     "--checkpoint-dir",
                                     dir,
                                     "--checkpoint-every",
                                     "20",
                                     "--keep-checkpoints",
                                     "10"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }
  std::pair<int, std::string> Run(const std::vector<std::string>& argv) {
    return RunCommand(absl::StrJoin(argv, " "));
  }
  // A checkpoint directory holding epoch `iteration` of `from` alone, with
  // its run's stamp.
  std::string OnlyEpoch(const std::string& from, int64_t iteration, const std::string& name) {
    const std::string only = dir_ + "/" + name;
    fs::create_directories(only);
    fs::copy(EpochDirectory(from, iteration),
             only + "/" + fs::path(EpochDirectory(from, iteration)).filename().string(),
             fs::copy_options::recursive);
    fs::copy(from + "/RUN.json", only + "/RUN.json");
    return only;
  }
  static bool HasManifest(const std::string& dir, int64_t iteration) {
    return fs::exists(EpochDirectory(dir, iteration) + "/MANIFEST.json");
  }
  // Flips byte `at` of `path` (its size unchanged).
  static void FlipByte(const std::string& path, std::streamoff at) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(at);
    const char c = static_cast<char>(f.get());
    f.seekp(at);
    f.put(static_cast<char>(c ^ 0x5a));
  }
};

// The epoch of the last iteration is complete before the job reports
// success (before, its parts were written but its manifest never was, and
// a restore redid the last interval), and a restore resumes from it.
TEST_F(CheckpointClusterTest, TheFinalEpochIsCompleteWhenTheJobSucceeds) {
  const std::string checkpoints = dir_ + "/checkpoints";
  const auto [code, out] = Run(Launch(60, checkpoints, {}));
  ASSERT_EQ(code, 0) << out;
  for (int64_t epoch : {20, 40, 60}) EXPECT_TRUE(HasManifest(checkpoints, epoch)) << epoch << out;
  const absl::StatusOr<CheckpointEpoch> newest = ChooseRestoreEpoch(checkpoints);
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->iteration, 60);
  EXPECT_EQ(newest->part_bytes.size(), 3u);  // servers 0 and 1, FC worker 0
  const auto [again, again_out] = Run(Launch(80, checkpoints, {"--restore"}));
  ASSERT_EQ(again, 0) << again_out;
  EXPECT_NE(again_out.find("/server-1.ckpt at iteration 60"), std::string::npos) << again_out;
  EXPECT_NE(again_out.find("/fc_worker-0.ckpt at iteration 60"), std::string::npos) << again_out;
}

// One flipped byte in the newest epoch: the restore passes it over, naming
// the part and why, and the run ends exactly where a run restored from the
// epoch before ends. With no epoch left that verifies, the job stops
// naming each.
TEST_F(CheckpointClusterTest, ADamagedPartFallsBackToTheNewestEpochThatVerifies) {
  const std::string checkpoints = dir_ + "/checkpoints";
  const auto [code, out] = Run(Launch(60, checkpoints, {}));
  ASSERT_EQ(code, 0) << out;
  const std::string reference = OnlyEpoch(checkpoints, 40, "reference");
  const std::string damaged = EpochPartPath(checkpoints, 60, "server-1");
  FlipByte(damaged, 100);

  const auto [restored, log] =
      Run(Launch(80, checkpoints, {"--restore", "--parameters-out", dir_ + "/fell_back.ckpt"}));
  ASSERT_EQ(restored, 0) << log;
  EXPECT_NE(log.find("not restoring checkpoint epoch 60: " + damaged +
                     ": checkpoint CRC mismatch (file corrupt)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("/server-0.ckpt at iteration 40"), std::string::npos) << log;
  EXPECT_NE(log.find("/server-1.ckpt at iteration 40"), std::string::npos) << log;
  EXPECT_NE(log.find("/fc_worker-0.ckpt at iteration 40"), std::string::npos) << log;
  const auto [ref_code, ref_log] =
      Run(Launch(80, reference, {"--restore", "--parameters-out", dir_ + "/reference.ckpt"}));
  ASSERT_EQ(ref_code, 0) << ref_log;
  EXPECT_LE(MaxDifference(dir_ + "/reference.ckpt", dir_ + "/fell_back.ckpt"), 1e-6f);

  // Nothing left that verifies: no guess, an error naming every epoch.
  const std::string only = OnlyEpoch(checkpoints, 40, "only");
  FlipByte(EpochPartPath(only, 40, "fc_worker-0"), 100);
  const auto [none, none_log] = Run(Launch(80, only, {"--restore"}));
  EXPECT_NE(none, 0);
  EXPECT_NE(none_log.find("--restore: no checkpoint epoch of run "), std::string::npos) << none_log;
  EXPECT_NE(none_log.find("can be restored: epoch 40: " + EpochPartPath(only, 40, "fc_worker-0") +
                          ": checkpoint CRC mismatch (file corrupt)"),
            std::string::npos)
      << none_log;
}

// One epoch for everyone: server 1 and the FC worker read a copy of the
// directory without the newest manifest (a file system that caches
// directories); they restore the epoch the coordinator chose all the same,
// and the job ends where a run restored from that epoch ends.
TEST_F(CheckpointClusterTest, ProcessesThatCannotSeeTheNewestManifestRestoreTheCoordinatorsEpoch) {
  const std::string shared = dir_ + "/shared";
  const auto [code, out] = Run(Launch(60, shared, {}));
  ASSERT_EQ(code, 0) << out;
  const std::string stale = dir_ + "/stale";
  fs::copy(shared, stale, fs::copy_options::recursive);
  fs::remove(EpochDirectory(stale, 60) + "/MANIFEST.json");
  const std::string reference = OnlyEpoch(shared, 60, "reference");

  // Every process by hand, as a launcher would start them.
  const std::vector<std::string> job = {"--config", kConfig, "--max-steps", "80"};
  const std::vector<std::string> layout = {"--mode",         "stanza", "--servers",    "2",
                                           "--conv-workers", "2",      "--fc-workers", "1"};
  const std::vector<std::string> restore = {"--checkpoint-every", "1000", "--restore"};
  auto argv = [](std::initializer_list<std::vector<std::string>> parts) {
    std::vector<std::string> all;
    for (const auto& part : parts) all.insert(all.end(), part.begin(), part.end());
    return all;
  };
  Process server0(
      argv({{kBin + "strata_server", "--rank", "0", "--coordinator", "tcp://127.0.0.1:0",
             "--checkpoint-dir", shared, "--ready-file", dir_ + "/server.ready"},
            job,
            layout,
            restore}),
      dir_ + "/server0.log");
  const std::string address = server0.WaitForReady(dir_ + "/server.ready");
  ASSERT_FALSE(address.empty()) << server0.log();
  Process server1(argv({{kBin + "strata_server", "--rank", "1", "--coordinator", address,
                         "--checkpoint-dir", stale},
                        job,
                        layout,
                        restore}),
                  dir_ + "/server1.log");
  Process fc(argv({{kBin + "strata_fc_worker", "--rank", "0", "--coordinator", address, "--threads",
                    "1", "--evaluate=false", "--checkpoint-dir", stale, "--parameters-out",
                    dir_ + "/one_epoch.ckpt"},
                   job,
                   restore}),
             dir_ + "/fc.log");
  std::vector<std::unique_ptr<Process>> workers;
  for (int w = 0; w < 2; ++w) {
    workers.push_back(std::make_unique<Process>(
        argv({{kBin + "strata_conv_worker", "--mode", "stanza", "--coordinator", address, "--rank",
               std::to_string(w), "--threads", "1", "--evaluate=false", "--progress=false"},
              job}),
        dir_ + "/worker" + std::to_string(w) + ".log"));
  }
  for (auto& w : workers) ASSERT_EQ(w->Wait(), 0) << w->log();
  ASSERT_EQ(fc.Wait(), 0) << fc.log();
  ASSERT_EQ(server1.Wait(), 0) << server1.log();
  ASSERT_EQ(server0.Wait(), 0) << server0.log();
  EXPECT_NE(server1.log().find("/stale/epoch-000000000060/server-1.ckpt at iteration 60"),
            std::string::npos)
      << server1.log();
  EXPECT_NE(fc.log().find("/stale/epoch-000000000060/fc_worker-0.ckpt at iteration 60"),
            std::string::npos)
      << fc.log();

  const auto [ref_code, ref_log] = Run(Launch(
      80, reference,
      {"--restore", "--checkpoint-every", "1000", "--parameters-out", dir_ + "/reference.ckpt"}));
  ASSERT_EQ(ref_code, 0) << ref_log;
  EXPECT_LE(MaxDifference(dir_ + "/reference.ckpt", dir_ + "/one_epoch.ckpt"), 1e-6f);
}

// A part that cannot be written (here: a directory stands where server 1's
// part of epoch 40 goes) keeps its epoch incomplete, and the coordinator
// says so; the epochs around it count. In the final epoch the same fails
// the job, naming the part.
TEST_F(CheckpointClusterTest, APartThatCannotBeWrittenKeepsItsEpochOutAndIsReported) {
  const std::string checkpoints = dir_ + "/checkpoints";
  fs::create_directories(EpochPartPath(checkpoints, 40, "server-1"));
  const auto [code, out] = Run(Launch(60, checkpoints, {}));
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("coordinator: checkpoint epoch 40 will not be complete: server 1 could not "
                     "write its part: cannot rename checkpoint into " +
                     EpochPartPath(checkpoints, 40, "server-1") + ": Is a directory"),
            std::string::npos)
      << out;
  EXPECT_TRUE(HasManifest(checkpoints, 20)) << out;
  EXPECT_FALSE(HasManifest(checkpoints, 40)) << out;
  EXPECT_TRUE(HasManifest(checkpoints, 60)) << out;

  const std::string last = dir_ + "/last";
  fs::create_directories(EpochPartPath(last, 60, "fc_worker-0"));
  const auto [failed, failed_out] = Run(Launch(60, last, {}));
  EXPECT_NE(failed, 0) << failed_out;
  EXPECT_NE(failed_out.find("the final checkpoint epoch cannot be complete: epoch 60: fc worker 0: "
                            "cannot rename checkpoint into " +
                            EpochPartPath(last, 60, "fc_worker-0") +
                            ": Is a directory; a --restore resumes from epoch 40"),
            std::string::npos)
      << failed_out;
  EXPECT_FALSE(HasManifest(last, 60));
}

// A server's last report, which the coordinator settles the final epoch
// with, is said until it is heard: with everything server 1 sends server 0
// cut from a second in until the job is over, it arrives once the cut
// heals and the final epoch is complete. (Said once, it was lost, and the
// job failed naming server 1 after the dead timeout.)
TEST_F(CheckpointClusterTest, AServersLastReportLostInACutIsSaidAgainUntilHeard) {
  const std::string checkpoints = dir_ + "/checkpoints";
  const std::string cut =
      absl::StrCat("cut=server1>server0@", static_cast<int>(1000 * testing::TimeScale()), "ms+6s");
  const auto [code, out] =
      Run(Launch(60, checkpoints, {"--shared-memory=false", "--inject-faults", "'" + cut + "'"}));
  ASSERT_EQ(code, 0) << out;
  EXPECT_GT(testing::InjectedFaultCount(out, "cut "), 0) << out;
  EXPECT_NE(out.find("[server 1] the coordinator heard our last report after "), std::string::npos)
      << out;
  EXPECT_TRUE(HasManifest(checkpoints, 60)) << out;
}

}  // namespace
}  // namespace strata
