// PartitionPlan: which server holds which elements of which parameter.
//
// Every parameter (key = its index in the model) is cut into chunks of at
// most `max_chunk_elements`; chunks are dealt to servers in key order, each
// to the server holding the fewest elements so far (ties: lowest rank), so
// one large tensor spreads over all servers and the load stays balanced.
// The plan is a pure function of (parameter sizes, servers, chunk size):
// clients and servers compute it independently and agree.
//
//   PartitionPlan plan = PartitionPlan::Build({320, 32, 1605632, 512}, 2, 1 << 20);
//   for (const Chunk& c : plan.chunks_of_key(2)) Send(c.server, c);
#ifndef STRATA_CORE_NET_PARTITION_PLAN_H_
#define STRATA_CORE_NET_PARTITION_PLAN_H_

#include <cstdint>
#include <vector>

namespace strata {

struct Chunk {
  uint32_t key = 0;
  uint64_t offset = 0;  // first element within the parameter
  uint64_t length = 0;  // elements
  int server = 0;
  int index = 0;  // position in PartitionPlan::chunks()
};

// 1 MiB of float32: the unit of transfer, so a large tensor streams as a
// pipeline of chunks (push of one overlapping the pull of the previous).
inline constexpr int64_t kDefaultChunkElements = 1 << 18;

class PartitionPlan {
 public:
  PartitionPlan() = default;
  static PartitionPlan Build(const std::vector<int64_t>& parameter_sizes, int servers,
                             int64_t max_chunk_elements = kDefaultChunkElements);

  int servers() const { return servers_; }
  int num_keys() const { return static_cast<int>(parameter_sizes_.size()); }
  int64_t parameter_size(uint32_t key) const { return parameter_sizes_[key]; }
  const std::vector<Chunk>& chunks() const { return chunks_; }
  // Chunks of one parameter, in offset order.
  std::vector<Chunk> chunks_of_key(uint32_t key) const;
  // Chunks held by one server, in plan order.
  std::vector<Chunk> chunks_of_server(int server) const;
  // Elements held by one server.
  int64_t elements_of_server(int server) const;
  // The chunk that exactly matches (key, offset, length), or nullptr.
  const Chunk* Find(uint32_t key, uint64_t offset, uint64_t length) const;

 private:
  int servers_ = 0;
  std::vector<int64_t> parameter_sizes_;
  std::vector<Chunk> chunks_;
  std::vector<std::vector<int>> chunks_by_key_;  // indices into chunks_
};

}  // namespace strata

#endif  // STRATA_CORE_NET_PARTITION_PLAN_H_
