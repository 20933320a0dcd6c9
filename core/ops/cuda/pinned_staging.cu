#include "core/ops/cuda/pinned_staging.h"

#include <cstring>

#include "core/ops/cuda/cuda_status.h"
#include "core/status.h"

namespace strata {

absl::StatusOr<PinnedStaging::Buffer> PinnedStaging::Acquire(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (!in_flight_.empty() && cudaEventQuery(in_flight_.front().done) == cudaSuccess) {
      free_.push_back(in_flight_.front());
      in_flight_.pop_front();
    }
    for (size_t i = 0; i < free_.size(); ++i) {
      if (free_[i].capacity >= bytes) {
        const Buffer buffer = free_[i];
        free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
        return buffer;
      }
    }
  }
  Buffer buffer;
  buffer.capacity = bytes;
  STRATA_RETURN_IF_ERROR(STRATA_CUDA_CHECK(cudaMallocHost(&buffer.data, bytes)));
  const absl::Status event =
      STRATA_CUDA_CHECK(cudaEventCreateWithFlags(&buffer.done, cudaEventDisableTiming));
  if (!event.ok()) {
    cudaFreeHost(buffer.data);
    return event;
  }
  return buffer;
}

void PinnedStaging::ReleaseAfterCopy(const Buffer& buffer) {
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.push_back(buffer);
}

void PinnedStaging::Release(const Buffer& buffer) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(buffer);
}

absl::Status PinnedStaging::Upload(const void* host, void* device, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  STRATA_ASSIGN_OR_RETURN(Buffer buffer, Acquire(bytes));
  std::memcpy(buffer.data, host, bytes);
  absl::Status queued = STRATA_CUDA_CHECK(
      cudaMemcpyAsync(device, buffer.data, bytes, cudaMemcpyHostToDevice, stream_));
  if (queued.ok()) queued = STRATA_CUDA_CHECK(cudaEventRecord(buffer.done, stream_));
  if (!queued.ok()) {
    // Nothing was queued after a failed copy: wait for what was, then reuse.
    cudaStreamSynchronize(stream_);
    Release(buffer);
    return queued;
  }
  ReleaseAfterCopy(buffer);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<PinnedStaging::Download>> PinnedStaging::StartDownload(
    const void* device, size_t bytes) {
  STRATA_ASSIGN_OR_RETURN(Buffer buffer, Acquire(bytes == 0 ? 1 : bytes));
  absl::Status queued = STRATA_CUDA_CHECK(
      cudaMemcpyAsync(buffer.data, device, bytes, cudaMemcpyDeviceToHost, stream_));
  if (queued.ok()) queued = STRATA_CUDA_CHECK(cudaEventRecord(buffer.done, stream_));
  if (!queued.ok()) {
    cudaStreamSynchronize(stream_);
    Release(buffer);
    return queued;
  }
  return std::make_shared<Download>(this, buffer, bytes);
}

absl::Status PinnedStaging::Download::Finish(void* host) {
  if (finished_) return absl::FailedPreconditionError("a staged download was finished twice");
  finished_ = true;
  const absl::Status done = STRATA_CUDA_CHECK(cudaEventSynchronize(buffer_.done));
  if (done.ok()) std::memcpy(host, buffer_.data, bytes_);
  staging_->Release(buffer_);
  return done;
}

PinnedStaging::Download::~Download() {
  if (!finished_) staging_->ReleaseAfterCopy(buffer_);
}

}  // namespace strata
