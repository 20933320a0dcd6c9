// Reader for IDX files (MNIST, Fashion-MNIST), gzip-compressed or raw.
#include <zlib.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "core/data/dataset.h"
#include "core/status.h"

namespace strata {
namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzHandle = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

// Reads exactly `n` bytes or fails naming `what` and how much was found.
absl::Status ReadExact(gzFile f, const std::string& path, void* out, size_t n,
                       const std::string& what) {
  size_t done = 0;
  while (done < n) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
    const int got = gzread(f, static_cast<char*>(out) + done, chunk);
    if (got < 0) {
      int err = 0;
      const char* message = gzerror(f, &err);
      return absl::DataLossError(
          absl::StrCat(path, ": corrupt compressed data while reading ", what, ": ", message));
    }
    if (got == 0) {
      return absl::DataLossError(
          absl::StrCat(path, ": truncated: expected ", n, " bytes of ", what, ", found ", done));
    }
    done += static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path) {
  GzHandle file(gzopen(path.c_str(), "rb"));
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  unsigned char magic[4];
  STRATA_RETURN_IF_ERROR(ReadExact(file.get(), path, magic, 4, "the IDX header"));
  if (magic[0] != 0 || magic[1] != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not an IDX file (wrong magic number: first bytes ", magic[0], " ",
                     magic[1], ", expected 0 0)"));
  }
  if (magic[2] != 0x08) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": unsupported IDX element type 0x",
                                                   absl::Hex(magic[2]), " (only unsigned bytes)"));
  }
  const int ndims = magic[3];
  if (ndims < 1 || ndims > 4) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": IDX header declares ", ndims, " dimensions (expected 1 to 4)"));
  }
  IdxArray array;
  uint64_t total = 1;
  for (int i = 0; i < ndims; ++i) {
    unsigned char b[4];
    STRATA_RETURN_IF_ERROR(ReadExact(file.get(), path, b, 4, "the IDX dimensions"));
    const uint32_t d =
        (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
    if (d == 0 || d > (1u << 28)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": IDX dimension ", i, " is ", d, " (implausible)"));
    }
    array.dims.push_back(d);
    total *= d;
    if (total > (uint64_t{1} << 34)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": IDX array too large"));
    }
  }
  array.data.resize(total);
  STRATA_RETURN_IF_ERROR(ReadExact(file.get(), path, array.data.data(), total,
                                   absl::StrCat("IDX data (", total, " declared)")));
  char extra;
  const int more = gzread(file.get(), &extra, 1);
  if (more < 0) {
    int err = 0;
    return absl::DataLossError(absl::StrCat(
        path, ": corrupt compressed data after the IDX array: ", gzerror(file.get(), &err)));
  }
  if (more > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": trailing bytes after the ", total, " declared by the IDX header"));
  }
  return array;
}

absl::StatusOr<Dataset> ReadIdxDataset(const std::string& images_path,
                                       const std::string& labels_path, int64_t classes) {
  STRATA_ASSIGN_OR_RETURN(IdxArray images, ReadIdxFile(images_path));
  STRATA_ASSIGN_OR_RETURN(IdxArray labels, ReadIdxFile(labels_path));
  if (images.dims.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(images_path,
                                                   ": expected a 3-dimensional image array, found ",
                                                   images.dims.size(), " dimensions"));
  }
  if (labels.dims.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(labels_path,
                                                   ": expected a 1-dimensional label array, found ",
                                                   labels.dims.size(), " dimensions"));
  }
  if (images.dims[0] != labels.dims[0]) {
    return absl::InvalidArgumentError(absl::StrCat(images_path, " holds ", images.dims[0],
                                                   " images but ", labels_path, " holds ",
                                                   labels.dims[0], " labels"));
  }
  Dataset ds;
  ds.sample_shape = Shape{images.dims[1], images.dims[2], 1};
  ds.classes = classes;
  ds.pixels = std::move(images.data);
  ds.labels.resize(labels.data.size());
  for (size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] >= classes) {
      return absl::InvalidArgumentError(absl::StrCat(labels_path, ": label ", int{labels.data[i]},
                                                     " at index ", i, " is outside [0, ", classes,
                                                     ")"));
    }
    ds.labels[i] = labels.data[i];
  }
  return ds;
}

}  // namespace strata
