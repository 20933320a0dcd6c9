// The cloud cluster files against the fields their services document
// (tools/cloud/check_cloud_configs.py, since the pcluster and cyclecloud
// CLIs cannot run here): the project's files pass, and broken copies fail
// naming what broke. The cloud scripts' --dry-run prints every command and
// runs none; without it and without credentials they stop before anything.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using testing::ReadFile;
using testing::RunCommand;

const std::string kCloud = std::string(STRATA_SOURCE_DIR) + "/tools/cloud";
const std::string kChecker = "/usr/bin/python3 " + kCloud + "/check_cloud_configs.py";

class CloudConfigTest : public testing::ClusterTest {
 protected:
  // `path`'s text with `from` replaced by `to`, written to a file of its own
  // in the scratch dir.
  std::string Broken(const std::string& path, const std::string& from, const std::string& to) {
    std::string text = ReadFile(path);
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    const std::string out =
        dir_ + "/" + std::to_string(++copies_) + "-" + std::filesystem::path(path).filename().string();
    std::ofstream(out) << text;
    return out;
  }
  int copies_ = 0;
};

TEST_F(CloudConfigTest, TheProjectsClusterFilesPass) {
  const auto [code, out] =
      RunCommand(kChecker + " --pcluster " + kCloud + "/aws/pcluster.yaml --cyclecloud " + kCloud +
                 "/azure/strata-slurm.txt --cyclecloud-params " + kCloud +
                 "/azure/strata-params.json");
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "");
}

TEST_F(CloudConfigTest, ABrokenParallelClusterConfigIsRefusedNamingTheField) {
  const std::string yaml = kCloud + "/aws/pcluster.yaml";
  struct Case {
    std::string from, to, problem;
  };
  const std::vector<Case> cases = {
      {"    SubnetId: REPLACE_SUBNET\n", "", "HeadNode.Networking.SubnetId: missing"},
      {"  Os: ubuntu2204", "  Os: debian12", "Image.Os: 'debian12' is not one of"},
      {"          MaxCount: 16", "          MaxCount: -1",
       "Scheduling.SlurmQueues[0].ComputeResources[0]: needs 0 <= MinCount <= MaxCount"},
      {"          InstanceType: hpc6a.48xlarge", "          InstanceType: t3.large",
       "Scheduling.SlurmQueues[0].ComputeResources[0].Efa: t3.large has no EFA"},
      {"    - Name: gpu", "    - Name: GPU_Queue", "no 'gpu' queue"},
      {"Scheduling:", "Schedule:", "Schedule: not a ParallelCluster 3 section"},
  };
  for (const Case& c : cases) {
    const auto [code, out] = RunCommand(kChecker + " --pcluster " + Broken(yaml, c.from, c.to));
    EXPECT_EQ(code, 1) << c.problem << "\n" << out;
    EXPECT_NE(out.find(c.problem), std::string::npos) << c.problem << "\n" << out;
  }
}

TEST_F(CloudConfigTest, ABrokenCycleCloudTemplateOrParametersFileIsRefusedNamingThePart) {
  const std::string txt = kCloud + "/azure/strata-slurm.txt";
  const std::string params = kCloud + "/azure/strata-params.json";
  struct Case {
    std::string template_path, params_path, problem;
  };
  const std::vector<Case> cases = {
      {Broken(txt, "MachineType = $GpuMachineType", "MachineType = $GpuVm"), params,
       "$GpuVm: used in the template but not declared as a [[[parameter]]]"},
      {Broken(txt, "        slurm.partition = cpu\n", ""), params,
       "[[nodearray cpu]]: no slurm.partition in its [[[configuration]]]"},
      {Broken(txt, "    [[nodearray gpu]]", "    [[[[nodearray gpu]]]]"), params,
       "'[[[[nodearray gpu]]]]': CycleCloud sections nest at most 3 deep"},
      {Broken(txt, "    [[node defaults]]", "    [[[node defaults]]]"), params,
       "'[[[node defaults]]]' nests 3 levels under a level-1 section"},
      {txt, Broken(params, "\"MaxCpuCores\": 480", "\"MaxCpuCores\": \"480\""),
       "MaxCpuCores: an Integer parameter, got '480'"},
      {txt, Broken(params, "\"Autoscale\": true", "\"AutoScale\": true"),
       "AutoScale: not a parameter of the template"},
      {txt, Broken(params, "  \"Credentials\": \"azure\",\n", ""),
       "Credentials: required by the template and not given"},
  };
  for (const Case& c : cases) {
    const auto [code, out] = RunCommand(kChecker + " --cyclecloud " + c.template_path +
                                        " --cyclecloud-params " + c.params_path);
    EXPECT_EQ(code, 1) << c.problem << "\n" << out;
    EXPECT_NE(out.find(c.problem), std::string::npos) << c.problem << "\n" << out;
  }
}

TEST_F(CloudConfigTest, ADryRunPrintsEveryCommandAndRunsNone) {
  const auto [aws_code, aws] = RunCommand(
      "PATH=/usr/bin:/bin bash " + kCloud +
      "/aws/run_on_parallelcluster.sh --region us-east-2 --subnet subnet-0abc --key-name k "
      "--ssh-key k.pem --partition gpu --nodes 2 --dry-run");
  ASSERT_EQ(aws_code, 0) << aws;
  for (const std::string step :
       {"+ pcluster create-cluster --cluster-name strata --region us-east-2",
        "sudo\\ bash\\ tools/setup.sh\\ \\&\\&\\ make\\ build", "tools/cloud/slurm/strata.sbatch",
        "--partition\\ gpu\\ --nodes\\ 2", "+ pcluster delete-cluster --cluster-name strata"}) {
    EXPECT_NE(aws.find(step), std::string::npos) << step << "\n" << aws;
  }
  const auto [azure_code, azure] =
      RunCommand("PATH=/usr/bin:/bin bash " + kCloud +
                 "/azure/run_on_cyclecloud.sh --subnet rg/vnet/subnet --ssh-key k.pem --dry-run");
  ASSERT_EQ(azure_code, 0) << azure;
  for (const std::string step : {"+ cyclecloud import_template strata-slurm",
                                 "+ cyclecloud create_cluster strata-slurm strata",
                                 "tools/cloud/slurm/strata.sbatch",
                                 "+ cyclecloud terminate_cluster strata"}) {
    EXPECT_NE(azure.find(step), std::string::npos) << step << "\n" << azure;
  }
  // Without --dry-run and without the services' CLIs nothing starts.
  const auto [code, out] = RunCommand("PATH=/usr/bin:/bin bash " + kCloud +
                                      "/aws/run_on_parallelcluster.sh --region r --subnet s "
                                      "--key-name k");
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("pcluster is missing (or use --dry-run)"), std::string::npos) << out;
}

}  // namespace
}  // namespace strata
