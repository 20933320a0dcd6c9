#include "core/net/partition_plan.h"

#include <algorithm>

#include "core/status.h"

namespace strata {

PartitionPlan PartitionPlan::Build(const std::vector<int64_t>& parameter_sizes, int servers,
                                   int64_t max_chunk_elements) {
  STRATA_CHECK(servers >= 1 && max_chunk_elements >= 1, "servers=", servers,
               " max_chunk_elements=", max_chunk_elements);
  PartitionPlan plan;
  plan.servers_ = servers;
  plan.parameter_sizes_ = parameter_sizes;
  plan.chunks_by_key_.resize(parameter_sizes.size());
  std::vector<int64_t> load(servers, 0);
  for (size_t key = 0; key < parameter_sizes.size(); ++key) {
    const int64_t size = parameter_sizes[key];
    for (int64_t offset = 0; offset < size; offset += max_chunk_elements) {
      Chunk c;
      c.key = static_cast<uint32_t>(key);
      c.offset = static_cast<uint64_t>(offset);
      c.length = static_cast<uint64_t>(std::min(max_chunk_elements, size - offset));
      c.server = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
      c.index = static_cast<int>(plan.chunks_.size());
      load[c.server] += static_cast<int64_t>(c.length);
      plan.chunks_by_key_[key].push_back(c.index);
      plan.chunks_.push_back(c);
    }
  }
  return plan;
}

std::vector<Chunk> PartitionPlan::chunks_of_key(uint32_t key) const {
  std::vector<Chunk> out;
  for (int i : chunks_by_key_[key]) out.push_back(chunks_[i]);
  return out;
}

std::vector<Chunk> PartitionPlan::chunks_of_server(int server) const {
  std::vector<Chunk> out;
  for (const Chunk& c : chunks_) {
    if (c.server == server) out.push_back(c);
  }
  return out;
}

int64_t PartitionPlan::elements_of_server(int server) const {
  int64_t n = 0;
  for (const Chunk& c : chunks_) {
    if (c.server == server) n += static_cast<int64_t>(c.length);
  }
  return n;
}

const Chunk* PartitionPlan::Find(uint32_t key, uint64_t offset, uint64_t length) const {
  if (key >= chunks_by_key_.size()) return nullptr;
  for (int i : chunks_by_key_[key]) {
    const Chunk& c = chunks_[i];
    if (c.offset == offset && c.length == length) return &c;
  }
  return nullptr;
}

}  // namespace strata
