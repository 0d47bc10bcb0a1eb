#include "backends/ibv/ibv_backend.hpp"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/ibv/ibv_context.hpp"
#include "backends/ibv/ibv_device.hpp"
#include "backends/ibv/ibv_verbs_real.hpp"
#include "lci/util/assert.hpp"

namespace lci::backend::ibv {

namespace {

// ibv_bootstrap_t over the process's bootstrap: an allgather is a put of
// this rank's bytes under a key of its own (a counter: a context makes one
// exchange per device and per connection round), a fence, and a get from
// every rank. waits are the bootstrap's own (it blocks).
ibv_bootstrap_t over(bootstrap::bootstrap_t& bootstrap) {
  auto exchanges = std::make_shared<std::uint64_t>(0);
  ibv_bootstrap_t result;
  result.allgather = [&bootstrap, exchanges](const void* mine, std::size_t bytes, void* all) {
    LCI_ASSERT(bytes <= ibv_bootstrap_t::allgather_bytes_max, "an ibv exchange over its bound");
    const std::string key = "lci_ibv_" + std::to_string((*exchanges)++);
    bootstrap.put(key, mine, bytes);
    bootstrap.fence();
    auto* out = static_cast<std::byte*>(all);
    for (int rank = 0; rank < bootstrap.rank_n(); ++rank) {
      const std::vector<std::byte> value = bootstrap.get(rank, key);
      LCI_ASSERT(value.size() == bytes, "an ibv exchange of another size");
      std::memcpy(out + static_cast<std::size_t>(rank) * bytes, value.data(), bytes);
    }
  };
  result.wait = [](const char*) {};
  return result;
}

std::unique_ptr<backend::net_context_t> open_context(const backend::net_context_args_t& args) {
  LCI_ASSERT(args.bootstrap != nullptr, "opening ibv without a bootstrap");
  const ibv_context_options_t options = parse_device_name(args.device_name);
  return std::make_unique<ibv_context_t>(get_real_verbs(), args.bootstrap->rank_me(),
                                         args.bootstrap->rank_n(), over(*args.bootstrap),
                                         options);
}

}  // namespace

const backend::backend_entry_t& backend_entry() {
  static const backend::backend_entry_t entry{
      "ibv", 20, &open_context, sends_default, recvs_default, sends_default + recvs_default};
  return entry;
}

}  // namespace lci::backend::ibv
