// place_shared_region (mechanisms/common/smem_layout.hpp), the allocator of the chunk kernels'
// shared-memory layouts: regions in the order placed, each on a 128-byte boundary, none
// overlapping the one before, with no more than the alignment's padding between them.
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "mechanisms/common/smem_layout.hpp"

namespace arch_bench {
namespace {

TEST(ChunkSmemLayout, RegionsAreAlignedOrderedAndPackedAsTightlyAsTheAlignmentAllows) {
  const std::vector<std::size_t> sizes{1, 127, 128, 129, 0, 4 * 64, 2 * 64 * 72, 3, 256};
  std::size_t end = 0, previous_end = 0;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    const std::size_t at = place_shared_region(end, sizes[r]);
    EXPECT_EQ(at % kSharedRegionAlign, 0u) << "region " << r;
    EXPECT_GE(at, previous_end) << "region " << r << " overlaps the one before";
    EXPECT_LT(at - previous_end, kSharedRegionAlign) << "region " << r << " wastes a whole alignment step";
    EXPECT_EQ(end, at + sizes[r]) << "region " << r;
    previous_end = end;
  }
}

TEST(ChunkSmemLayout, AnAlignedEndIsKeptAndAnUnalignedOneRoundsUp) {
  std::size_t end = 256;
  EXPECT_EQ(place_shared_region(end, 10), 256u);
  EXPECT_EQ(end, 266u);
  EXPECT_EQ(place_shared_region(end, 0), 384u);
  EXPECT_EQ(end, 384u);
  std::size_t fresh = 0;
  EXPECT_EQ(place_shared_region(fresh, 5), 0u) << "the first region starts at the layout's base";
}

}  // namespace
}  // namespace arch_bench
