// Expert parallelism over real processes: F strata_moe_member processes
// hold E/F experts each (or, with E < F, a hidden slice of one expert) and
// exchange slots over ZeroMQ; every member's output, input gradient and
// gate gradient must equal the single-process layer's on that member's
// tokens, and its share of the experts' gradients the mean over members of
// the single-process gradients — for F = 2 and 4 with E = 4 (and E = 2 over
// 4: sharded experts), capacity factors > 0, < 0 and = 0, and every
// pipelining degree d and parallelism r.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/process/subprocess.h"
#include "core/train/checkpoint.h"
#include "moe/group/group_member.h"
#include "moe/moe_layer.h"

namespace strata::moe {
namespace {

constexpr int64_t kTokens = 24;
constexpr int64_t kDim = 8;
constexpr int64_t kHidden = 16;
constexpr int kExperts = 4;  // unless a test says otherwise
constexpr uint64_t kSeed = 5;
const std::vector<int> kChunks = {1, 2, 3};

MoeOptions LayerOptions(double factor, int experts = kExperts) {
  MoeOptions o;
  o.experts = experts;
  o.top_k = 2;
  o.hidden = kHidden;
  o.capacity.factor = factor;
  return o;
}

struct Reference {
  Tensor output, grad_input;
  std::vector<Tensor> grads;  // gate, w1, b1, w2, b2
};

// The single-process layer on member `rank`'s tokens.
Reference SingleProcess(double factor, int experts, int rank) {
  auto layer = MoeLayer::Create("moe", Shape{kDim}, LayerOptions(factor, experts));
  EXPECT_TRUE(layer.ok());
  Rng rng(kSeed);
  (*layer)->InitParameters(rng);
  Reference r;
  r.output = (*layer)->Forward(moe::MemberTokens(kSeed, rank, kTokens, kDim), true);
  r.grad_input = (*layer)->Backward(moe::MemberOutputGrad(kSeed, rank, kTokens, kDim), true);
  for (Parameter* p : (*layer)->parameters()) r.grads.push_back(p->grad.Clone());
  return r;
}

void ExpectNear(const Tensor& got, const float* want, int64_t n, const std::string& what) {
  ASSERT_EQ(got.numel(), n) << what;
  float worst = 0.0f;
  int64_t at = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float diff = std::abs(got.data()[i] - want[i]) / (1e-3f + std::abs(want[i]));
    if (diff > worst) worst = diff, at = i;
  }
  EXPECT_LT(worst, 1e-4f) << what << ": element " << at << " is " << got.data()[at] << ", expected "
                          << want[at];
}

const Tensor* Find(const Checkpoint& c, const std::string& name) {
  for (const NamedTensor& t : c.tensors) {
    if (t.name == name) return &t.value;
  }
  return nullptr;
}

const Tensor& Named(const Checkpoint& c, const std::string& name) {
  const Tensor* t = Find(c, name);
  if (t == nullptr) ADD_FAILURE() << "no " << name << " in the dump";
  static Tensor empty;
  return t != nullptr ? *t : empty;
}

// Member `rank`'s part of expert parameter `param` (0 w1 {E, D, H}, 1 b1
// {E, H}, 2 w2 {E, H, D}, 3 b2 {E, D}) of `grad`: whole experts when E >=
// F, else its expert's hidden slice (b2 with the first slice only); empty
// when it holds none of it.
std::vector<float> MemberPart(const Tensor& grad, int param, int rank, int group, int experts) {
  const int shards = experts < group ? group / experts : 1;
  const int owned = experts < group ? 1 : experts / group;
  const int first = experts < group ? rank / shards : rank * owned;
  const int64_t slice = kHidden / shards, h0 = (rank % shards) * slice;
  std::vector<float> out;
  const float* g = grad.data();
  for (int e = first; e < first + owned; ++e) {
    for (int64_t a = 0; a < (param == 0 ? kDim : param == 2 ? kHidden : 1); ++a) {
      if (param == 2 && (a < h0 || a >= h0 + slice)) continue;
      if (param == 3) {
        if (rank % shards != 0) continue;
        for (int64_t d = 0; d < kDim; ++d) out.push_back(g[e * kDim + d]);
      } else if (param == 2) {
        for (int64_t d = 0; d < kDim; ++d) out.push_back(g[(e * kHidden + a) * kDim + d]);
      } else if (param == 1) {
        for (int64_t h = h0; h < h0 + slice; ++h) out.push_back(g[e * kHidden + h]);
      } else {
        for (int64_t h = h0; h < h0 + slice; ++h) out.push_back(g[(e * kDim + a) * kHidden + h]);
      }
    }
  }
  return out;
}

class ExpertParallelTest : public ::testing::TestWithParam<std::tuple<int, int, double>> {};

TEST_P(ExpertParallelTest, EveryMemberMatchesTheSingleProcessLayerForEveryDAndR) {
  const auto [group, experts, factor] = GetParam();
  const std::string dir = absl::StrCat(::testing::TempDir(), "/ep_", group, "_", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::vector<std::string> addresses;
  for (int r = 0; r < group; ++r) addresses.push_back(absl::StrCat("ipc://", dir, "/inbox", r));
  std::vector<ProcessSpec> members;
  for (int r = 0; r < group; ++r) {
    moe::GroupMemberOptions member;
    member.rank = r;
    member.size = group;
    member.addresses = addresses;
    member.tokens = kTokens;
    member.dim = kDim;
    member.layer = LayerOptions(factor, experts);
    member.repeat = 1;
    member.seed = kSeed;
    member.dump_dir = dir;
    member.timeout = absl::Seconds(30);
    ProcessSpec spec;
    spec.argv =
        moe::MemberCommandLine(std::string(STRATA_BINARY_DIR) + "/bin/strata_moe_member", member,
                               kChunks, {ExpertParallelism::kData, ExpertParallelism::kExpert});
    spec.output_path = absl::StrCat(dir, "/member", r, ".log");
    members.push_back(spec);
  }
  absl::StatusOr<std::vector<int>> codes = RunProcesses(members, absl::Minutes(2));
  ASSERT_TRUE(codes.ok()) << codes.status();
  for (int r = 0; r < group; ++r) {
    ASSERT_EQ((*codes)[r], 0) << FileTail(members[r].output_path, 3000);
  }

  std::vector<Reference> single;
  for (int r = 0; r < group; ++r) single.push_back(SingleProcess(factor, experts, r));
  const std::vector<std::string> expert_params = {"moe.w1", "moe.b1", "moe.w2", "moe.b2"};
  for (const ExpertParallelism parallelism :
       {ExpertParallelism::kData, ExpertParallelism::kExpert}) {
    for (int d : kChunks) {
      for (int r = 0; r < group; ++r) {
        const std::string what =
            absl::StrCat("member ", r, " of ", group, ", E=", experts, ", f=", factor, ", d=", d,
                         ", r=", ParallelismName(parallelism));
        absl::StatusOr<Checkpoint> dump =
            ReadCheckpoint(moe::MemberDumpPath(dir, r, {d, parallelism}));
        ASSERT_TRUE(dump.ok()) << dump.status();
        const Reference& ref = single[r];
        ExpectNear(Named(*dump, "output"), ref.output.data(), ref.output.numel(), what + " output");
        ExpectNear(Named(*dump, "grad_input"), ref.grad_input.data(), ref.grad_input.numel(),
                   what + " input gradient");
        ExpectNear(Named(*dump, "moe.gate.grad"), ref.grads[0].data(), ref.grads[0].numel(),
                   what + " gate gradient");
        for (int i = 0; i < static_cast<int>(expert_params.size()); ++i) {
          // This member's part of the experts' gradient: the mean over members.
          std::vector<float> mean;
          for (int m = 0; m < group; ++m) {
            const std::vector<float> part =
                MemberPart(single[m].grads[i + 1], i, r, group, experts);
            mean.resize(part.size(), 0.0f);
            for (size_t j = 0; j < part.size(); ++j) mean[j] += part[j] / static_cast<float>(group);
          }
          const std::string name = expert_params[i] + ".grad";
          if (mean.empty()) {  // a hidden slice without the output bias
            EXPECT_EQ(Find(*dump, name), nullptr) << what << " holds " << name;
            continue;
          }
          ExpectNear(Named(*dump, name), mean.data(), static_cast<int64_t>(mean.size()),
                     what + " " + expert_params[i] + " gradient");
        }
      }
    }
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(GroupsAndCapacities, ExpertParallelTest,
                         ::testing::Combine(::testing::Values(2, 4), ::testing::Values(kExperts, 2),
                                            ::testing::Values(1.0, -1.0, 0.0)),
                         [](const auto& info) {
                           const double f = std::get<2>(info.param);
                           return absl::StrCat("F", std::get<0>(info.param), "_E",
                                               std::get<1>(info.param), "_",
                                               f > 0   ? "padded"
                                               : f < 0 ? "capped"
                                                       : "dropless");
                         });

// A stand-in group of `size` processes for argument checks (no messages).
class SilentExchange final : public ExpertExchange {
 public:
  explicit SilentExchange(int size) : size_(size) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  absl::Status Send(int, const ExchangeTag&, const ExchangeBlock&) override {
    return absl::OkStatus();
  }
  absl::StatusOr<ExchangeBlock> Receive(int, const ExchangeTag& tag,
                                        const BlockExpectation&) override {
    return absl::DeadlineExceededError("no " + tag.ToString());
  }

 private:
  int size_;
};

TEST(ExpertGroupTest, ExpertsThatCannotBeLaidOutOverTheGroupAreRefusedByName) {
  auto layer = MoeLayer::Create("head.moe", Shape{kDim}, LayerOptions(1.0));
  ASSERT_TRUE(layer.ok());
  SilentExchange three(3);
  absl::Status s = (*layer)->JoinExpertGroup(&three, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "moe head.moe: 4 experts over 3 processes: the group's size must divide the expert "
            "count");
  SilentExchange six(6);
  EXPECT_EQ((*layer)->JoinExpertGroup(&six, 0).message(),
            "moe head.moe: 4 experts over 6 processes: to shard each expert, the expert count "
            "must divide the group's size");
  SilentExchange twelve(12);
  EXPECT_EQ((*layer)->JoinExpertGroup(&twelve, 0).message(),
            "moe head.moe: 4 experts over 12 processes: each expert's 16 hidden units cannot be "
            "split into 3 equal slices");
  EXPECT_FALSE((*layer)->in_expert_group());
  EXPECT_EQ((*layer)->parameters()[1]->value.dim(0), kExperts);  // still all experts
}

TEST(ExpertGroupTest, AFailedExchangeYieldsZerosAndAStickyErrorInsteadOfACrash) {
  auto layer = MoeLayer::Create("moe", Shape{kDim}, LayerOptions(1.0));
  ASSERT_TRUE(layer.ok());
  Rng rng(1);
  (*layer)->InitParameters(rng);
  SilentExchange two(2);
  ASSERT_TRUE((*layer)->JoinExpertGroup(&two, 0).ok());
  EXPECT_EQ((*layer)->parameters()[1]->value.dim(0), kExperts / 2);  // the owned share
  Tensor y = (*layer)->Forward(moe::MemberTokens(1, 0, kTokens, kDim), true);
  EXPECT_EQ((*layer)->status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ((*layer)->status().message(), "no capacity of layer 0, call 0, chunk 0/1");
  for (float v : y.ToVector()) ASSERT_EQ(v, 0.0f);
  Tensor gx = (*layer)->Backward(Tensor::Full({kTokens, kDim}, 1.0f), true);
  for (float v : gx.ToVector()) ASSERT_EQ(v, 0.0f);
  EXPECT_EQ((*layer)->set_parallel_settings({0, ExpertParallelism::kExpert}).message(),
            "the pipelining degree must be >= 1, got 0");
}

}  // namespace
}  // namespace strata::moe
