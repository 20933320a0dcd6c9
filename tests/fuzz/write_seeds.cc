// Writes the seed inputs of every fuzz target into tests/fuzz/corpus/<target>/:
// well-formed messages, configs, data files and a checkpoint, each the
// smallest of its kind, so that a fuzzer starts from inputs that pass the
// first checks. Run it again when a format changes:
//
//   build/bin/fuzz_write_seeds tests/fuzz/corpus
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/model/job_config.h"
#include "core/model/job_spec.h"
#include "core/net/admission.h"
#include "core/net/knob_messages.h"
#include "core/net/protocol.capnp.h"
#include "core/net/ps_wire.h"
#include "core/net/stanza_wire.h"
#include "core/train/checkpoint.h"
#include "moe/expert_wire.h"
#include "tests/fuzz/fuzz_input.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
  std::printf("%s (%zu bytes)\n", path.c_str(), bytes.size());
}

// A header built by `fill`, as the bytes of its frame.
template <typename F>
std::string Header(F&& fill) {
  capnp::MallocMessageBuilder builder;
  wire::Header::Builder h = builder.initRoot<wire::Header>();
  h.setMajor(wire::PROTOCOL_MAJOR);
  h.setMinor(wire::PROTOCOL_MINOR);
  fill(h);
  const kj::Array<capnp::word> words = capnp::messageToFlatArray(builder);
  const auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

std::string Floats(size_t n) { return std::string(n * sizeof(float), '\0'); }

std::string Ints(const std::vector<int32_t>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4);
}

std::string Gzip(const std::string& bytes) {
  uLongf size = compressBound(bytes.size()) + 32;
  std::string out(size, '\0');
  z_stream z = {};
  deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = bytes.size();
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = size;
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string BigEndian(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int Main(const fs::path& corpus, const fs::path& source) {
  JobCredentials credentials;
  credentials.job_id = 1;
  credentials.token = "token";
  credentials.identity = "{\"model\":{}}";
  const std::string hello = Header([&](wire::Header::Builder h) {
    SetType(h, wire::Kind::HELLO);
    FillHello(h, credentials, wire::Role::CONV_WORKER, 0);
  });
  const std::string push = Header([](wire::Header::Builder h) {
    SetType(h, wire::ps::Kind::PUSH);
    h.setJobId(1);
    h.setIteration(3);
    auto slices = BodyOf<wire::ps::Body>(h).initSlices(1);
    slices[0].setKey(0);
    slices[0].setOffset(0);
    slices[0].setLength(4);
    auto bytes = h.initFrameBytes(1);
    bytes.set(0, 16);
  });
  const std::string error = Header([](wire::Header::Builder h) {
    SetType(h, wire::Kind::ERROR);
    h.setErrorCode(3);
    h.setErrorMessage("refused");
  });
  const std::string knob_lease = Header([](wire::Header::Builder h) {
    SetType(h, wire::knob::Kind::KNOB_LEASE);
    h.setJobId(1);
    h.setIteration(2);
    SetDeclaredKnobs(h, {{"wire.format", "fp32"}});
    IterationReport report;
    report.rank = 1;
    report.record.iteration = 1;
    report.record.compute_seconds = 0.5;
    report.record.rows = 32;
    SetIterationReports(h, {report});
  });
  Write(corpus / "message_header" / "hello", fuzz::EncodeFrames(hello, {}));
  Write(corpus / "message_header" / "knob_lease", fuzz::EncodeFrames(knob_lease, {}));
  Write(corpus / "message_header" / "push", fuzz::EncodeFrames(push, {Floats(4)}));
  Write(corpus / "message_header" / "error", fuzz::EncodeFrames(error, {}));

  const std::string block = Header([](wire::Header::Builder h) {
    SetType(h, wire::moe::Kind::EXPERT_BLOCK);
    h.setSenderRank(1);
    auto tag = BodyOf<wire::moe::Body>(h).initTag();
    tag.setLayer(0);
    tag.setChunk(0);
    tag.setChunks(1);
    auto counts = BodyOf<wire::moe::Body>(h).initCounts(2);
    counts.set(0, 2);
    counts.set(1, 1);
    auto shape = BodyOf<wire::moe::Body>(h).initShape(2);
    shape.set(0, 3);
    shape.set(1, 4);
  });
  Write(corpus / "expert_block" / "three_rows", fuzz::EncodeFrames(block, {Floats(12)}));

  const std::string activations = Header([](wire::Header::Builder h) {
    SetType(h, wire::stanza::Kind::ACTIVATIONS);
    h.setSenderRank(0);
    h.setIteration(1);
    auto shape = BodyOf<wire::stanza::Body>(h).initShape(2);
    shape.set(0, 2);
    shape.set(1, 3);
  });
  Write(corpus / "activations" / "two_samples",
        fuzz::EncodeFrames(activations, {Floats(6), Ints({1, 3})}));

  for (const char* name : {"fashion_mnist.json", "fashion_mnist_moe.json", "resnet20_cifar.json"}) {
    Write(corpus / "job_config" / name, ReadText(source / "configs" / name));
  }
  absl::StatusOr<JobConfig> config =
      LoadJobConfig((source / "configs" / "fashion_mnist_bn.json").string());
  if (config.ok()) Write(corpus / "job_config" / "spec", JobSpecText(*config, "stanza"));

  const std::string labels = BigEndian(0x00000801) + BigEndian(4) + std::string("\1\2\3\4", 4);
  const std::string images =
      BigEndian(0x00000803) + BigEndian(2) + BigEndian(2) + BigEndian(2) + std::string(8, '\x7f');
  Write(corpus / "idx_reader" / "labels", labels);
  Write(corpus / "idx_reader" / "images", images);
  Write(corpus / "idx_reader" / "images.gz", Gzip(images));

  Write(corpus / "cifar_reader" / "one_record", std::string(1, '\3') + std::string(3072, '\x40'));

  Checkpoint checkpoint;
  checkpoint.metadata_json = "{\"step\":1}";
  checkpoint.tensors.push_back({"w", Tensor::Full({2, 2}, 0.5f)});
  const fs::path written = corpus / "checkpoint_reader" / "two_by_two";
  fs::create_directories(written.parent_path());
  if (absl::Status s = WriteCheckpoint(written.string(), checkpoint); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::printf("%s\n", written.c_str());
  return 0;
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_write_seeds CORPUS_DIR (tests/fuzz/corpus)\n");
    return 2;
  }
  return strata::Main(argv[1], STRATA_SOURCE_DIR);
}
