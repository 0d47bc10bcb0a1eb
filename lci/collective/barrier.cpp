// barrier(): a dissemination barrier (Hensgen, Finkel & Manber): in round k
// every rank sends an empty message to rank (me + 2^k) mod n and waits for
// one from rank (me - 2^k) mod n; after ceil(log2 n) rounds every rank has
// heard, directly or not, from every other. It runs on the collective
// machinery (collective.hpp): round k is step k of the call's tags.
//
// Its sends complete with the network semantic, whatever the caller asks:
// programs end with a barrier before they free a device or the runtime (the
// runtime's own leaving barrier, leave_runtime(), right before its
// teardown), so a barrier must leave nothing in the network: a send done
// at once (memory semantic) may still be read from its packet, which the
// teardown frees, and its completion would be left unpolled.
#include "lci/collective/barrier.hpp"

#include <string>

#include "lci/api/lci_generated.hpp"
#include "lci/collective/collective.hpp"
#include "lci/runtime/device_impl.hpp"
#include "lci/runtime/runtime_impl.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"

namespace lci {

namespace {

detail::collective::schedule_t barrier_schedule(int rank_me, int rank_n) {
  detail::collective::schedule_t schedule(rank_me, rank_n, 0, nullptr);
  std::uint32_t step = 0;
  for (int distance = 1; distance < rank_n; distance *= 2, ++step) {
    detail::collective::round_t& round = schedule.add_round();
    schedule.send(round, (rank_me + distance) % rank_n, nullptr, 0, step);
    schedule.recv(round, (rank_me - distance + rank_n) % rank_n, nullptr, 0, step);
  }
  LCI_ASSERT(step < detail::collective::steps_max, "a barrier's rounds outside its tag field");
  return schedule;
}

}  // namespace

namespace detail {

status_t run_barrier(runtime_impl_t& rt, device_impl_t& device,
                     matching_engine_impl_t& matching_engine) {
  // relaxed: see device_impl_t::collective_state_t::sequence.
  const std::uint64_t sequence = device.collective().sequence.fetch_add(1, util::mo_relaxed);
  const collective::call_t call{&rt,    &device,  &matching_engine, comp_semantic_t::network,
                                nullptr, sequence, "barrier"};
  return collective::run_blocking(call, barrier_schedule(rt.rank_me(), rt.rank_n()));
}

namespace {

// The device leave_runtime() runs its barrier on when the runtime has no
// default device (runtimes built on LCI start it without one and bring
// their own). Every rank allocates it at the same place of its device
// order (leaving is collective, and devices pair by allocation order,
// backends/backend.hpp), so the ranks' leaving devices talk to each other.
// The runtime's teardown frees it with the rest.
device_impl_t& leaving_device(runtime_impl_t& rt) {
  LCI_ASSERT(rt.default_packet_pool() != nullptr, "a leaving device needs the default pool");
  device_impl_t* device =
      rt.alloc_device(get_default_attr_device(), nullptr, rt.default_packet_pool());
  LCI_ASSERT(!device->raw(), "the leaving device must carry protocol messages");
  return *device;
}

}  // namespace

void leave_runtime(runtime_impl_t& rt) {
  rt.mark_leaving();
  device_impl_t* device = rt.default_device();
  // Without a default packet pool (the default device, if any, is then
  // raw) the program uses the raw network layer, which carries no protocol
  // message: it synchronises its own leaving (docs/api_compat.md, "Raw
  // network layer").
  if (rt.rank_n() == 1 || rt.default_packet_pool() == nullptr) return;
  LCI_ASSERT(device == nullptr || !device->raw(), "a raw default device beside a default pool");
  for (int rank = 0; rank < rt.rank_n(); ++rank) {
    if (rt.is_peer_dead(rank)) return;
  }
  if (device == nullptr) device = &leaving_device(rt);
  const status_t status = run_barrier(rt, *device, rt.collective_matching_engine());
  if (status.error == errorcode_t::fatal) {
    throw peer_failure_error(status.rank, "lci: rank " + std::to_string(status.rank) +
                                              " crashed before it finalized (found by the "
                                              "finalizing barrier)");
  }
}

}  // namespace detail

void barrier_x::call_impl(device_t device, endpoint_t endpoint, matching_engine_t matching_engine,
                          comp_semantic_t comp_semantic, comp_t comp, runtime_t runtime) const {
  // Always the network semantic (see the top): the option is upstream's.
  (void)comp_semantic;
  const detail::collective::call_t call = detail::collective::resolve_call(
      "barrier", runtime, device, endpoint, matching_engine, comp, comp_semantic_t::network);
  detail::collective::run(
      call, barrier_schedule(call.runtime->rank_me(), call.runtime->rank_n()));
}

}  // namespace lci
