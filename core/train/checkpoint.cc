#include "core/train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/ops/backend.h"
#include "core/status.h"
#include "core/util/crash_point.h"
#include "core/util/directory_sync.h"

namespace strata {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'A', 'T', 'A', 'C', 'K'};

template <typename T>
void Append(std::string* out, T value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(T));
}

absl::Status ErrnoError(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

// Sequential reader over the file bytes that fails instead of reading past the end.
class Cursor {
 public:
  Cursor(const std::string& bytes, size_t limit, const std::string& path)
      : bytes_(bytes), limit_(limit), path_(path) {}
  template <typename T>
  absl::Status Read(T* out, const char* what) {
    if (limit_ - pos_ < sizeof(T)) return Truncated(what);
    std::memcpy(out, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return absl::OkStatus();
  }
  absl::Status ReadBytes(void* out, uint64_t n, const char* what) {
    if (limit_ - pos_ < n) return Truncated(what);
    std::memcpy(out, bytes_.data() + pos_, n);
    pos_ += n;
    return absl::OkStatus();
  }
  size_t pos() const { return pos_; }

 private:
  absl::Status Truncated(const char* what) const {
    return absl::DataLossError(
        absl::StrCat(path_, ": checkpoint truncated or corrupt while reading ", what));
  }
  const std::string& bytes_;
  size_t limit_;
  const std::string& path_;
  size_t pos_ = 0;
};

}  // namespace

absl::Status WriteCheckpoint(const std::string& path, const Checkpoint& checkpoint) {
  std::string out;
  out.append(kMagic, sizeof(kMagic));
  Append<uint32_t>(&out, kCheckpointVersion);
  Append<uint32_t>(&out, static_cast<uint32_t>(checkpoint.tensors.size()));
  Append<uint64_t>(&out, checkpoint.metadata_json.size());
  out += checkpoint.metadata_json;
  for (const NamedTensor& t : checkpoint.tensors) {
    Append<uint32_t>(&out, static_cast<uint32_t>(t.name.size()));
    out += t.name;
    Append<uint8_t>(&out, static_cast<uint8_t>(t.value.dtype()));
    Append<uint8_t>(&out, static_cast<uint8_t>(t.value.rank()));
    for (int64_t d : t.value.shape().dims()) Append<int64_t>(&out, d);
    Append<uint64_t>(&out, t.value.nbytes());
    out.append(static_cast<const char*>(t.value.raw_data()), t.value.nbytes());
  }
  Append<uint32_t>(&out, static_cast<uint32_t>(
                             crc32(0, reinterpret_cast<const Bytef*>(out.data()), out.size())));

  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return ErrnoError("cannot create checkpoint", tmp);
  size_t done = 0;
  // Half the bytes, then the rest, with a crash point between them.
  for (const size_t until : {out.size() / 2, out.size()}) {
    while (done < until) {
      const ssize_t n = ::write(fd, out.data() + done, until - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        absl::Status s = ErrnoError("cannot write checkpoint", tmp);
        ::close(fd);
        ::unlink(tmp.c_str());
        return s;
      }
      done += static_cast<size_t>(n);
    }
    if (done < out.size()) CrashPoint("part-write");
  }
  if (::fsync(fd) != 0) {
    absl::Status s = ErrnoError("cannot fsync checkpoint", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    absl::Status s = ErrnoError("cannot rename checkpoint into", path);
    ::unlink(tmp.c_str());
    return s;
  }
  SyncDirectoryOf(path);
  return absl::OkStatus();
}

absl::Status VerifyCheckpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open checkpoint"));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0);
  constexpr std::streamoff kHead = sizeof(kMagic) + sizeof(uint32_t);
  char head[kHead];
  if (size < kHead + 4 || !in.read(head, kHead) || std::memcmp(head, kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a Strata checkpoint (bad magic)"));
  }
  uint32_t version = 0;
  std::memcpy(&version, head + sizeof(kMagic), sizeof(version));
  if (version != kCheckpointVersion) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": checkpoint format version ", version,
                                                      ", this build reads version ",
                                                      kCheckpointVersion));
  }
  uLong crc = crc32(0, reinterpret_cast<const Bytef*>(head), kHead);
  std::vector<char> buffer(size_t{1} << 20);
  for (std::streamoff left = size - kHead - 4; left > 0;) {
    const std::streamoff n = std::min<std::streamoff>(left, buffer.size());
    if (!in.read(buffer.data(), n)) {
      return absl::DataLossError(absl::StrCat(path, ": checkpoint truncated while verifying"));
    }
    crc = crc32(crc, reinterpret_cast<const Bytef*>(buffer.data()), static_cast<uInt>(n));
    left -= n;
  }
  uint32_t stored_crc = 0;
  if (!in.read(reinterpret_cast<char*>(&stored_crc), sizeof(stored_crc))) {
    return absl::DataLossError(absl::StrCat(path, ": checkpoint truncated while verifying"));
  }
  if (static_cast<uint32_t>(crc) != stored_crc) {
    return absl::DataLossError(absl::StrCat(path, ": checkpoint CRC mismatch (file corrupt)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open checkpoint"));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof(kMagic) + 4 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a Strata checkpoint (bad magic)"));
  }
  uint32_t stored_crc;
  std::memcpy(&stored_crc, bytes.data() + bytes.size() - 4, 4);
  const uint32_t crc = static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size() - 4));
  Cursor cursor(bytes, bytes.size() - 4, path);
  char magic[8];
  STRATA_RETURN_IF_ERROR(cursor.ReadBytes(magic, 8, "the magic"));
  uint32_t version = 0;
  STRATA_RETURN_IF_ERROR(cursor.Read(&version, "the version"));
  if (version != kCheckpointVersion) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": checkpoint format version ", version,
                                                      ", this build reads version ",
                                                      kCheckpointVersion));
  }
  if (crc != stored_crc) {
    return absl::DataLossError(absl::StrCat(path, ": checkpoint CRC mismatch (file corrupt)"));
  }
  uint32_t count = 0;
  uint64_t metadata_bytes = 0;
  STRATA_RETURN_IF_ERROR(cursor.Read(&count, "the tensor count"));
  STRATA_RETURN_IF_ERROR(cursor.Read(&metadata_bytes, "the metadata size"));
  Checkpoint checkpoint;
  if (metadata_bytes > bytes.size()) {
    return absl::DataLossError(absl::StrCat(path, ": metadata size exceeds the file"));
  }
  checkpoint.metadata_json.resize(metadata_bytes);
  STRATA_RETURN_IF_ERROR(
      cursor.ReadBytes(checkpoint.metadata_json.data(), metadata_bytes, "the metadata"));
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t name_bytes = 0;
    STRATA_RETURN_IF_ERROR(cursor.Read(&name_bytes, "a tensor name size"));
    if (name_bytes > 4096) {
      return absl::DataLossError(absl::StrCat(path, ": tensor name of ", name_bytes, " bytes"));
    }
    NamedTensor t;
    t.name.resize(name_bytes);
    STRATA_RETURN_IF_ERROR(cursor.ReadBytes(t.name.data(), name_bytes, "a tensor name"));
    uint8_t dtype = 0, rank = 0;
    STRATA_RETURN_IF_ERROR(cursor.Read(&dtype, "a dtype"));
    STRATA_RETURN_IF_ERROR(cursor.Read(&rank, "a rank"));
    if (dtype != static_cast<uint8_t>(DType::kF32) || rank > 8) {
      return absl::DataLossError(absl::StrCat(path, ": tensor ", t.name, " has dtype ", int{dtype},
                                              " and rank ", int{rank}));
    }
    std::vector<int64_t> dims(rank);
    uint64_t numel = 1;
    for (auto& d : dims) {
      STRATA_RETURN_IF_ERROR(cursor.Read(&d, "a dimension"));
      if (d < 0 || d > (int64_t{1} << 40)) {
        return absl::DataLossError(absl::StrCat(path, ": tensor ", t.name, " has dimension ", d));
      }
      numel *= static_cast<uint64_t>(d);
      if (numel > bytes.size()) {
        return absl::DataLossError(absl::StrCat(path, ": tensor ", t.name, " exceeds the file"));
      }
    }
    uint64_t data_bytes = 0;
    STRATA_RETURN_IF_ERROR(cursor.Read(&data_bytes, "a data size"));
    if (data_bytes != numel * 4) {
      return absl::DataLossError(absl::StrCat(path, ": tensor ", t.name, " declares ", data_bytes,
                                              " bytes for ", numel, " floats"));
    }
    t.value = Tensor::Empty(Shape(dims));
    STRATA_RETURN_IF_ERROR(cursor.ReadBytes(t.value.raw_data(), data_bytes, "tensor data"));
    checkpoint.tensors.push_back(std::move(t));
  }
  if (cursor.pos() != bytes.size() - 4) {
    return absl::DataLossError(absl::StrCat(path, ": trailing bytes in checkpoint"));
  }
  return checkpoint;
}

namespace {

// A host copy of a model's tensor, on whatever device it lives (a failing
// device stops the process, as a failing op does).
Tensor Captured(const Tensor& t) {
  absl::StatusOr<Tensor> host = HostCopy(t);
  STRATA_CHECK_OK(host.status());
  return *std::move(host);
}

}  // namespace

Checkpoint CaptureTrainingState(Model& model, const ParameterOptimizer& optimizer, int64_t epoch) {
  Checkpoint c;
  nlohmann::json meta = {{"step", optimizer.step()}, {"epoch", epoch}};
  c.metadata_json = meta.dump();
  for (Parameter* p : model.parameters()) c.tensors.push_back({p->name, Captured(p->value)});
  for (StateBuffer* b : model.state_buffers()) c.tensors.push_back({b->name, Captured(b->value)});
  for (size_t i = 0; i < optimizer.parameters().size(); ++i) {
    if (!optimizer.states()[i].defined()) continue;
    c.tensors.push_back(
        {optimizer.parameters()[i]->name + ".optimizer_state", Captured(optimizer.states()[i])});
  }
  return c;
}

Checkpoint CaptureParameters(Model& model, int64_t step) {
  Checkpoint c;
  c.metadata_json = nlohmann::json({{"step", step}}).dump();
  for (Parameter* p : model.parameters()) c.tensors.push_back({p->name, Captured(p->value)});
  for (StateBuffer* b : model.state_buffers()) c.tensors.push_back({b->name, Captured(b->value)});
  return c;
}

absl::StatusOr<int64_t> RestoreTrainingState(const Checkpoint& checkpoint, Model& model,
                                             ParameterOptimizer& optimizer) {
  std::map<std::string, const Tensor*> by_name;
  for (const NamedTensor& t : checkpoint.tensors) by_name[t.name] = &t.value;
  std::vector<std::pair<const Tensor*, Tensor>> copies;  // (source, destination)
  auto want = [&](const std::string& name, const Tensor& dst) -> absl::Status {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      return absl::NotFoundError(absl::StrCat("checkpoint has no tensor \"", name, "\""));
    }
    if (it->second->shape() != dst.shape()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint tensor \"", name, "\" has shape ", it->second->shape().ToString(),
          ", the model expects ", dst.shape().ToString()));
    }
    copies.emplace_back(it->second, dst);
    return absl::OkStatus();
  };
  for (Parameter* p : model.parameters()) STRATA_RETURN_IF_ERROR(want(p->name, p->value));
  for (StateBuffer* b : model.state_buffers()) STRATA_RETURN_IF_ERROR(want(b->name, b->value));
  for (size_t i = 0; i < optimizer.parameters().size(); ++i) {
    if (!optimizer.states()[i].defined()) continue;
    STRATA_RETURN_IF_ERROR(
        want(optimizer.parameters()[i]->name + ".optimizer_state", optimizer.states()[i]));
  }
  nlohmann::json meta = nlohmann::json::parse(checkpoint.metadata_json, nullptr, false);
  if (!meta.is_object() || !meta.contains("step") || !meta["step"].is_number_integer() ||
      !meta.contains("epoch") || !meta["epoch"].is_number_integer()) {
    return absl::DataLossError("checkpoint metadata lacks integer \"step\" and \"epoch\"");
  }
  for (auto& [src, dst] : copies) STRATA_RETURN_IF_ERROR(CopyFromHost(*src, dst));
  optimizer.set_step(meta["step"].get<int64_t>());
  return meta["epoch"].get<int64_t>();
}

}  // namespace strata
