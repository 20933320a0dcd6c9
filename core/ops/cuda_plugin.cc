#include "core/ops/cuda_plugin.h"

#include <dlfcn.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/process/subprocess.h"
#include "core/status.h"

// The versions of cuBLAS and cuDNN the plugin was compiled against
// (core/ops/CMakeLists.txt reads them from the CUDA toolkit's headers);
// empty in a build without the CUDA backend.
#ifndef STRATA_BUILT_CUBLAS_VERSION
#define STRATA_BUILT_CUBLAS_VERSION ""
#endif
#ifndef STRATA_BUILT_CUDNN_VERSION
#define STRATA_BUILT_CUDNN_VERSION ""
#endif

namespace strata {
namespace {

namespace fs = std::filesystem;

constexpr char kPluginFile[] = "libstrata_cuda.so";

// A library the plugin needs and Strata does not ship, loaded by its full
// path before the plugin where the dynamic loader cannot find it itself.
struct NeededLibrary {
  std::string stem;     // "libcudnn"
  std::string name;     // "cuDNN"
  std::string version;  // what the plugin was built with, "9.19.0"
  int major = 0;
  std::string soname() const { return absl::StrCat(stem, ".so.", major); }
};

std::vector<NeededLibrary> NeededLibraries() {
  auto library = [](const char* stem, const char* name, const char* version) {
    NeededLibrary l{stem, name, version};
    const std::string text = version;
    if (!absl::SimpleAtoi(text.substr(0, text.find('.')), &l.major)) l.major = 0;
    return l;
  };
  // In load order: libcublas needs libcublasLt.
  return {library("libcublasLt", "cuBLAS", STRATA_BUILT_CUBLAS_VERSION),
          library("libcublas", "cuBLAS", STRATA_BUILT_CUBLAS_VERSION),
          library("libcudnn", "cuDNN", STRATA_BUILT_CUDNN_VERSION)};
}

// The major version in a file name "libcudnn.so.9" of `stem`, if it is one.
std::optional<int> SonameMajor(const std::string& file, const std::string& stem) {
  const std::string prefix = stem + ".so.";
  int major = 0;
  if (!absl::StartsWith(file, prefix) || !absl::SimpleAtoi(file.substr(prefix.size()), &major)) {
    return std::nullopt;
  }
  return major;
}

std::string ProgramFolder() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? std::string(".") : self.parent_path().string();
}

// A library found for one NeededLibrary: its file, and where it came from.
struct FoundLibrary {
  std::string path;
  std::string origin;  // "python3's nvidia-cudnn-cu13 9.13.0.50"
  int major = 0;
};

// cuDNN loads its parts (graph, ops, cnn, ...) from its own folder when
// first called, and aborts the process where one is missing: the ones the
// CUDA backend calls must be beside the libcudnn that is loaded.
absl::Status CheckCudnnParts(const NeededLibrary& library, const FoundLibrary& found) {
  const fs::path folder = fs::path(found.path).parent_path();
  std::vector<std::string> missing;
  for (const char* part : {"libcudnn_graph", "libcudnn_ops", "libcudnn_cnn"}) {
    const std::string file = absl::StrCat(part, ".so.", library.major);
    std::error_code error;
    if (!fs::exists(folder / file, error)) missing.push_back(file);
  }
  if (missing.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      library.name, " ", library.major, " at ", found.path, " (", found.origin, ") lacks ",
      absl::StrJoin(missing, ", "), " beside it (cuDNN loads its parts from its own folder)"));
}

absl::Status PreloadLibraries(const std::vector<NeededLibrary>& needed,
                              const std::vector<std::vector<FoundLibrary>>& found,
                              const std::string& where) {
  for (size_t i = 0; i < needed.size(); ++i) {
    const NeededLibrary& library = needed[i];
    const FoundLibrary* match = nullptr;
    for (const FoundLibrary& candidate : found[i]) {
      if (match == nullptr && candidate.major == library.major) match = &candidate;
    }
    if (match == nullptr) {
      if (!found[i].empty()) {
        const FoundLibrary& other = found[i].front();
        return absl::FailedPreconditionError(
            absl::StrCat(library.name, ": ", other.origin, " (", other.path, ") has major version ",
                         other.major, ", but Strata's CUDA backend was built with ", library.name,
                         " ", library.version, " and needs ", library.soname()));
      }
      return absl::FailedPreconditionError(absl::StrCat(library.name, " ", library.major, " (",
                                                        library.soname(), ") is not in ", where));
    }
    if (library.stem == "libcudnn") STRATA_RETURN_IF_ERROR(CheckCudnnParts(library, *match));
    if (dlopen(match->path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("could not load ", match->path, " (", match->origin, "): ", dlerror()));
    }
  }
  return absl::OkStatus();
}

// The needed libraries in the folders STRATA_CUDA_LIBRARY_PATH lists.
std::vector<std::vector<FoundLibrary>> FindInFolders(const std::vector<NeededLibrary>& needed,
                                                     const std::string& folders) {
  std::vector<std::vector<FoundLibrary>> found(needed.size());
  for (absl::string_view folder : absl::StrSplit(folders, ':', absl::SkipEmpty())) {
    std::error_code error;
    for (const fs::directory_entry& entry :
         fs::directory_iterator(fs::path(std::string(folder)), error)) {
      const std::string file = entry.path().filename().string();
      for (size_t i = 0; i < needed.size(); ++i) {
        if (std::optional<int> major = SonameMajor(file, needed[i].stem)) {
          found[i].push_back(
              {entry.path().string(), absl::StrCat("STRATA_CUDA_LIBRARY_PATH's ", folder), *major});
        }
      }
    }
  }
  return found;
}

// Prints "<distribution> <version> <file>" for each cuBLAS and cuDNN
// library file that an installed NVIDIA wheel holds.
constexpr char kWheelProbe[] = R"(
import importlib.metadata as metadata
for dist in metadata.distributions():
    name = (dist.metadata["Name"] or "").lower()
    if not name.startswith(("nvidia-cublas", "nvidia-cudnn")):
        continue
    for file in dist.files or ():
        if file.name.startswith(("libcublas", "libcudnn")) and ".so." in file.name:
            print(name, dist.version, file.locate())
)";

// python3's output for kWheelProbe, or why there is none.
absl::StatusOr<std::string> RunWheelProbe() {
  ProcessSpec spec;
  spec.argv = {"python3", "-c", kWheelProbe};
  spec.output_to_pipe = true;
  spec.interruptible = false;
  absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Start(spec);
  if (!child.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("python3 could not be started (", child.status().message(), ")"));
  }
  std::string output;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  const int fd = (*child)->output_fd();
  for (;;) {
    char buffer[4096];
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      output.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) break;  // end of output
    if (errno != EAGAIN && errno != EINTR) break;
    if (absl::Now() > deadline) {
      (*child)->Stop(absl::Seconds(1));
      return absl::FailedPreconditionError("python3 did not answer within 60 s");
    }
    pollfd readable{fd, POLLIN, 0};
    poll(&readable, 1, 100);
  }
  const int code = (*child)->Wait();
  if (code != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("python3 exited with ", code, " asked for its packages: ", output));
  }
  return output;
}

absl::StatusOr<std::vector<std::vector<FoundLibrary>>> FindInWheels(
    const std::vector<NeededLibrary>& needed) {
  STRATA_ASSIGN_OR_RETURN(const std::string listing, RunWheelProbe());
  std::vector<std::vector<FoundLibrary>> found(needed.size());
  for (absl::string_view line : absl::StrSplit(listing, '\n', absl::SkipEmpty())) {
    const std::vector<std::string> fields = absl::StrSplit(line, absl::MaxSplits(' ', 2));
    if (fields.size() != 3) continue;
    const std::string file = fs::path(fields[2]).filename().string();
    for (size_t i = 0; i < needed.size(); ++i) {
      if (std::optional<int> major = SonameMajor(file, needed[i].stem)) {
        found[i].push_back(
            {fields[2], absl::StrCat("python3's ", fields[0], " ", fields[1]), *major});
      }
    }
  }
  return found;
}

// Whether a dlopen error is about a library the plugin needs.
bool MissingNeededLibrary(const std::string& error, const std::vector<NeededLibrary>& needed) {
  for (const NeededLibrary& library : needed) {
    if (absl::StrContains(error, library.stem + ".so")) return true;
  }
  return false;
}

bool AnyFound(const std::vector<std::vector<FoundLibrary>>& found) {
  for (const std::vector<FoundLibrary>& files : found) {
    if (!files.empty()) return true;
  }
  return false;
}

// Loads cuBLAS and cuDNN from STRATA_CUDA_LIBRARY_PATH or python3's wheels
// (see the header); what it found to say should the plugin not load.
absl::StatusOr<std::string> PreloadNeededLibraries(const std::vector<NeededLibrary>& needed) {
  const char* folders = std::getenv("STRATA_CUDA_LIBRARY_PATH");
  if (folders != nullptr && *folders != '\0') {
    const std::string where = absl::StrCat("STRATA_CUDA_LIBRARY_PATH (", folders, ")");
    STRATA_RETURN_IF_ERROR(PreloadLibraries(needed, FindInFolders(needed, folders), where));
    return absl::StrCat("loaded from ", where);
  }
  absl::StatusOr<std::vector<std::vector<FoundLibrary>>> wheels = FindInWheels(needed);
  if (!wheels.ok()) return std::string(wheels.status().message());
  if (!AnyFound(*wheels)) return std::string("python3 has no NVIDIA cuBLAS or cuDNN wheel");
  STRATA_RETURN_IF_ERROR(PreloadLibraries(needed, *wheels, "python3's NVIDIA wheels"));
  return std::string("loaded from python3's NVIDIA wheels");
}

absl::StatusOr<const CudaPluginApi*> Load() {
  const std::string path = CudaPluginPath();
  if (!fs::exists(path)) {
    if (std::string(STRATA_BUILT_CUDNN_VERSION).empty()) {
      return absl::FailedPreconditionError(
          "this build of Strata has no CUDA backend (nvcc was not found when it was configured; "
          "see STRATA_CUDA)");
    }
    return absl::FailedPreconditionError(
        absl::StrCat("the CUDA backend's plugin ", path, " is missing (STRATA_CUDA_PLUGIN names ",
                     "another; a build makes it as lib/", kPluginFile, ")"));
  }
  const std::vector<NeededLibrary> needed = NeededLibraries();
  STRATA_ASSIGN_OR_RETURN(const std::string preloaded, PreloadNeededLibraries(needed));
  void* plugin = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) {
    const std::string error = dlerror();
    if (MissingNeededLibrary(error, needed)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the CUDA backend needs cuBLAS ", needed[1].major, " and cuDNN ", needed[2].major, " (",
          preloaded, "; the dynamic loader: ", error,
          "). Install PyTorch's CUDA build (its wheels nvidia-cublas and nvidia-cudnn-cu",
          needed[1].major,
          ") for python3, or list the libraries' folders in "
          "STRATA_CUDA_LIBRARY_PATH"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("could not load the CUDA backend ", path, ": ", error));
  }
  using Entry = const CudaPluginApi* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(plugin, kCudaPluginEntry));
  if (entry == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not Strata's CUDA backend: it has no ", kCudaPluginEntry));
  }
  const CudaPluginApi* api = entry();
  if (api->abi != kCudaPluginAbi) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the CUDA backend ", path, " has plugin ABI ", api->abi, " but this program has ",
        kCudaPluginAbi, ": they come from different builds of Strata"));
  }
  STRATA_RETURN_IF_ERROR(api->check_libraries());
  return api;
}

}  // namespace

std::string CudaPluginPath() {
  const char* named = std::getenv("STRATA_CUDA_PLUGIN");
  if (named != nullptr && *named != '\0') return named;
  return (fs::path(ProgramFolder()) / ".." / "lib" / kPluginFile).lexically_normal().string();
}

absl::StatusOr<const CudaPluginApi*> LoadCudaPlugin() {
  static std::once_flag once;
  static absl::StatusOr<const CudaPluginApi*>* loaded = nullptr;
  std::call_once(once, [] { loaded = new absl::StatusOr<const CudaPluginApi*>(Load()); });
  return *loaded;
}

absl::StatusOr<const Backend*> OpenCudaBackend(const CudaBackendOptions& options) {
  STRATA_ASSIGN_OR_RETURN(const CudaPluginApi* cuda, LoadCudaPlugin());
  std::string why;
  const int count = cuda->device_count(&why);
  if (options.device < 0 || options.device >= count) {
    return absl::FailedPreconditionError(
        count == 0
            ? absl::StrCat("no CUDA device is visible to this process (", why, ")")
            : absl::StrCat(count, " CUDA device", count == 1 ? " is" : "s are", " visible (cuda:0",
                           count > 1 ? absl::StrCat("..cuda:", count - 1) : "", ")"));
  }
  STRATA_RETURN_IF_ERROR(cuda->register_backend(options));
  return BackendRegistry::Global().Find("cuda");
}

}  // namespace strata
