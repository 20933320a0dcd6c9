#include <gtest/gtest.h>

#include <cstdint>

#include "core/tensor/allocator.h"
#include "core/tensor/tensor.h"

namespace strata {
namespace {

TEST(ShapeTest, SizesAndText) {
  Shape s{64, 28, 28, 1};
  EXPECT_EQ(s.rank(), 4);
  EXPECT_EQ(s.numel(), 64 * 28 * 28);
  EXPECT_EQ(s.inner(), 28 * 28);
  EXPECT_EQ(s.ToString(), "[64, 28, 28, 1]");
  EXPECT_EQ(Shape{}.numel(), 1);
}

TEST(TensorTest, StorageIs64ByteAligned) {
  for (int64_t n : {1, 3, 17, 1000, 123457}) {
    Tensor t = Tensor::Empty({n});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u) << n;
  }
}

TEST(TensorTest, ViewsAndSlicesShareTheBuffer) {
  Tensor t = Tensor::FromVector({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor v = t.View({6});
  Tensor s = t.Slice(1, 3);
  EXPECT_TRUE(v.SharesBufferWith(t));
  EXPECT_EQ(s.shape(), Shape({2, 2}));
  EXPECT_EQ(s.ToVector(), std::vector<float>({3, 4, 5, 6}));
  s.data()[0] = 30;
  EXPECT_EQ(t.data()[2], 30);
  Tensor c = t.Clone();
  c.data()[0] = -1;
  EXPECT_EQ(t.data()[0], 1);
  EXPECT_FALSE(c.SharesBufferWith(t));
}

TEST(TensorTest, DeviceAndDtypeTags) {
  Tensor t = Tensor::Zeros({4});
  EXPECT_EQ(t.device(), Device::kCpu);
  EXPECT_EQ(t.dtype(), DType::kF32);
  EXPECT_EQ(t.nbytes(), 16u);
  EXPECT_EQ(DTypeSize(DType::kBF16), 2u);
  EXPECT_STREQ(DeviceName(Device::kCuda), "cuda");
}

TEST(TensorTest, MaxAbsDiffPropagatesNan) {
  Tensor a = Tensor::FromVector({2}, {1, 2});
  Tensor b = Tensor::FromVector({2}, {1.5f, std::nanf("")});
  EXPECT_TRUE(std::isnan(MaxAbsDiff(a, b)));
}

TEST(CachingAllocatorTest, ReusesFreedBlocksOfTheSameClass) {
  CachingAllocator cache(&SystemAllocator(), 1 << 30);
  void* a = cache.Allocate(64 << 20);
  cache.Deallocate(a, 64 << 20);
  void* b = cache.Allocate((64 << 20) - 1000);  // same size class
  EXPECT_EQ(a, b);
  EXPECT_EQ(cache.stats().system_allocations, 1u);
  EXPECT_EQ(cache.stats().cache_hits, 1u);
  cache.Deallocate(b, (64 << 20) - 1000);
  EXPECT_EQ(cache.stats().cached_bytes, CachingAllocator::RoundToSizeClass(64 << 20));
  cache.Trim();
  EXPECT_EQ(cache.stats().cached_bytes, 0u);
}

TEST(CachingAllocatorTest, CountsTheBytesInUseAndTheirPeak) {
  CachingAllocator cache(&SystemAllocator(), 1 << 30);
  const size_t a = CachingAllocator::RoundToSizeClass(1000);
  const size_t b = CachingAllocator::RoundToSizeClass(5000);
  void* first = cache.Allocate(1000);
  void* second = cache.Allocate(5000);
  cache.Deallocate(first, 1000);
  void* third = cache.Allocate(1000);  // from the cache: in use again
  EXPECT_EQ(cache.stats().in_use_bytes, a + b);
  cache.Deallocate(second, 5000);
  cache.Deallocate(third, 1000);
  EXPECT_EQ(cache.stats().in_use_bytes, 0u);
  EXPECT_EQ(cache.stats().peak_in_use_bytes, a + b);
}

TEST(CachingAllocatorTest, SizeClassesWasteAtMostAnEighth) {
  for (size_t bytes : {257ul, 1000ul, 4097ul, 1ul << 20, (1ul << 20) + 1, 3000000ul}) {
    const size_t c = CachingAllocator::RoundToSizeClass(bytes);
    EXPECT_GE(c, bytes);
    EXPECT_LE(c, bytes + bytes / 8 + 1) << bytes;
  }
}

TEST(CachingAllocatorTest, RespectsTheCacheCap) {
  CachingAllocator cache(&SystemAllocator(), 1 << 20);
  void* a = cache.Allocate(4 << 20);
  cache.Deallocate(a, 4 << 20);  // larger than the cap: goes back to the system
  EXPECT_EQ(cache.stats().cached_bytes, 0u);
}

}  // namespace
}  // namespace strata
