// PinnedStaging: page-locked host buffers through which the CUDA backend
// copies between host memory and its stream without waiting for the copy.
//
// An upload copies the host bytes into a pinned buffer and queues the copy
// to the device, so the caller may reuse its memory at once; the buffer
// returns to the pool once an event recorded after the copy has completed.
// A download queues the copy into a pinned buffer with an event after it;
// Finish waits for that event alone (not for work queued later on the
// stream) and copies the bytes out. Buffers are kept for reuse, never
// freed. Thread-safe.
#ifndef STRATA_CORE_OPS_CUDA_PINNED_STAGING_H_
#define STRATA_CORE_OPS_CUDA_PINNED_STAGING_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"

namespace strata {

class PinnedStaging {
 public:
  struct Buffer {
    void* data = nullptr;
    size_t capacity = 0;
    cudaEvent_t done = nullptr;  // recorded after the buffer's last copy
  };

  // A download in flight: Finish copies its bytes to `host` once they are
  // there; dropped unfinished, its buffer returns to the pool when its copy
  // is done.
  class Download {
   public:
    Download(PinnedStaging* staging, Buffer buffer, size_t bytes)
        : staging_(staging), buffer_(buffer), bytes_(bytes) {}
    Download(const Download&) = delete;
    Download& operator=(const Download&) = delete;
    ~Download();
    absl::Status Finish(void* host);

   private:
    PinnedStaging* staging_;
    Buffer buffer_;
    size_t bytes_;
    bool finished_ = false;
  };

  explicit PinnedStaging(cudaStream_t stream) : stream_(stream) {}

  absl::Status Upload(const void* host, void* device, size_t bytes);
  absl::StatusOr<std::shared_ptr<Download>> StartDownload(const void* device, size_t bytes);

 private:
  // A buffer of at least `bytes`, reclaiming the uploads' finished ones.
  absl::StatusOr<Buffer> Acquire(size_t bytes);
  // `buffer`, whose event is recorded, back once that event completes.
  void ReleaseAfterCopy(const Buffer& buffer);
  // `buffer`, whose copies are complete, back now.
  void Release(const Buffer& buffer);

  cudaStream_t stream_;
  std::mutex mu_;
  std::vector<Buffer> free_;
  std::deque<Buffer> in_flight_;  // in the stream's order
};

}  // namespace strata

#endif  // STRATA_CORE_OPS_CUDA_PINNED_STAGING_H_
