#include "lci/runtime/resources.hpp"

#include "lci/runtime/runtime_impl.hpp"

namespace lci::detail {

packet_pool_impl_t::packet_pool_impl_t(runtime_impl_t* runtime, const attr_packet_pool_t& attr,
                                       std::size_t packet_return_threshold)
    : runtime(runtime),
      attr(attr),
      pool(attr.packet_size, attr.npackets, /*deques_count_max=*/64, packet_return_threshold) {}

matching_engine_impl_t::matching_engine_impl_t(runtime_impl_t* runtime,
                                               const attr_matching_engine_t& attr,
                                               std::uint32_t index, std::size_t buckets_count,
                                               std::size_t overflow_nodes_max)
    : runtime(runtime), attr(attr), index(index), table(buckets_count, overflow_nodes_max) {}

}  // namespace lci::detail
