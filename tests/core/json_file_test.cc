#include "core/util/json_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace strata {
namespace {

TEST(JsonFileTest, ReplacesARegularFileWhole) {
  const std::string path = ::testing::TempDir() + "/json_file_test.json";
  std::ofstream(path) << "old and longer than what replaces it";
  ASSERT_TRUE(WriteJsonFile(path, {{"a", 1}}).ok());
  std::ifstream in(path);
  EXPECT_EQ(nlohmann::json::parse(in), (nlohmann::json{{"a", 1}}));
  EXPECT_NE(::access((path + ".tmp." + std::to_string(::getpid())).c_str(), F_OK), 0);
}

// Renaming over a device or pipe would replace the node (`--json
// /dev/null` once turned a machine's /dev/null into a regular file).
TEST(JsonFileTest, APipeIsWrittenInPlaceNotReplaced) {
  const std::string fifo = ::testing::TempDir() + "/json_file_test.fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // so that writing never waits
  ASSERT_GE(reader, 0);
  ASSERT_TRUE(WriteJsonFile(fifo, {{"b", 2}}).ok());
  char buffer[256] = {};
  const ssize_t n = ::read(reader, buffer, sizeof(buffer) - 1);
  ::close(reader);
  ASSERT_GT(n, 0) << "nothing reached the pipe";
  EXPECT_EQ(nlohmann::json::parse(std::string(buffer, static_cast<size_t>(n))),
            (nlohmann::json{{"b", 2}}));
  struct stat st;
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the pipe was replaced";
  ::unlink(fifo.c_str());
}

TEST(JsonFileTest, ReadingNamesAMissingFileAndOneThatIsNotJson) {
  const std::string path = ::testing::TempDir() + "/json_file_test_read.json";
  ASSERT_TRUE(WriteJsonFile(path, {{"c", 3}}).ok());
  absl::StatusOr<nlohmann::json> read = ReadJsonFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, (nlohmann::json{{"c", 3}}));

  absl::StatusOr<nlohmann::json> missing = ReadJsonFile(path + ".missing");
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_NE(missing.status().message().find("json_file_test_read.json.missing"), std::string::npos);

  std::ofstream(path) << "{\"c\": ";
  absl::StatusOr<nlohmann::json> cut = ReadJsonFile(path);
  EXPECT_TRUE(absl::IsInvalidArgument(cut.status())) << cut.status();
  EXPECT_NE(cut.status().message().find("json_file_test_read.json is not JSON"), std::string::npos)
      << cut.status();
}

}  // namespace
}  // namespace strata
