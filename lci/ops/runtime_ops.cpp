// The public operations on runtimes, devices, endpoints, packet pools,
// matching engines and memory registrations (the call_impl of their
// generated functors).
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

#include "lci/api/lci_generated.hpp"
#include "lci/collective/barrier.hpp"
#include "lci/progress/idle_yield.hpp"
#include "lci/progress/progress.hpp"
#include "lci/runtime/allocator.hpp"
#include "lci/runtime/global_state.hpp"
#include "lci/runtime/resolve.hpp"
#include "lci/util/assert.hpp"
#include "lci/wire/immediate.hpp"

namespace lci {

namespace detail {

const attr_runtime_t& get_attr(const runtime_impl_t* impl) { return impl->attr(); }
const attr_device_t& get_attr(const device_impl_t* impl) { return impl->attr(); }
const attr_endpoint_t& get_attr(const endpoint_impl_t* impl) { return impl->attr; }
const attr_net_context_t& get_attr(const net_context_impl_t* impl) { return impl->attr; }
const attr_packet_pool_t& get_attr(const packet_pool_impl_t* impl) { return impl->attr; }
const attr_matching_engine_t& get_attr(const matching_engine_impl_t* impl) { return impl->attr; }
const attr_mr_t& get_attr(const mr_impl_t*) {
  static const attr_mr_t empty{};
  return empty;
}

}  // namespace detail

using detail::resolve_runtime;

// ---- runtime ----

namespace {

// A runtime for `attr` on the current host. The environment settings that
// only progress() reads are checked first, so that a malformed one is
// refused by the call that starts LCI, not by every progress() after it.
detail::runtime_impl_t* new_runtime(const attr_runtime_t& attr) {
  (void)detail::polls_before_yield();  // throws std::invalid_argument
  return new detail::runtime_impl_t(attr, detail::current_host());
}

}  // namespace

runtime_t alloc_runtime_x::call_impl(const attr_runtime_t& attr) const {
  return runtime_t(new_runtime(attr));
}

namespace {

// Leaves (leave_runtime(): a collective barrier) and drains the
// devices' backlogs, then destroys the runtime even when leaving found a
// crashed peer: that error is rethrown once the runtime is gone. The global
// slot still names the runtime while it leaves and drains, so that a
// simulated rank unwound from there still has it finalized by its host.
void leave_and_destroy(detail::runtime_impl_t* runtime) {
  std::exception_ptr error;
  try {
    detail::leave_runtime(*runtime);
  } catch (...) {
    error = std::current_exception();
  }
  detail::drain_devices(*runtime);
  detail::runtime_impl_t*& global = detail::current_host().g_runtime_slot();
  if (global == runtime) global = nullptr;
  delete runtime;
  if (error) std::rethrow_exception(error);
}

}  // namespace

void free_runtime_x::call_impl(runtime_t* runtime) const {
  if (runtime == nullptr || runtime->p_impl == nullptr) {
    throw std::invalid_argument("free_runtime: runtime is empty (freed twice?)");
  }
  detail::runtime_impl_t* impl = runtime->p_impl;
  runtime->p_impl = nullptr;
  leave_and_destroy(impl);
}

runtime_t g_runtime_init_x::call_impl(const attr_runtime_t& attr) const {
  detail::runtime_impl_t*& global = detail::current_host().g_runtime_slot();
  if (global != nullptr) {
    throw std::logic_error("g_runtime_init: the global runtime already exists");
  }
  global = new_runtime(attr);
  return runtime_t(global);
}

void g_runtime_fina_x::call_impl() const {
  detail::runtime_impl_t*& global = detail::current_host().g_runtime_slot();
  if (global == nullptr) {
    throw std::logic_error("g_runtime_fina: no global runtime (g_runtime_init not called, or "
                           "already finalized)");
  }
  leave_and_destroy(global);
}

runtime_t get_g_runtime_x::call_impl() const {
  return runtime_t(detail::current_host().g_runtime_slot());
}

void set_allocator_x::call_impl(allocator_base_t* allocator) const {
  detail::set_user_allocator(allocator);
}

allocator_base_t* get_allocator_x::call_impl() const { return detail::get_user_allocator(); }

namespace {

// No runtime named and none global, inside upstream's global_initialize
// bracket: the host knows the rank, as upstream's bootstrap does then.
bool rank_from_host(runtime_t runtime) {
  return runtime.p_impl == nullptr && detail::current_host().g_runtime_slot() == nullptr &&
         detail::global_initialized();
}

}  // namespace

int get_rank_me_x::call_impl(runtime_t runtime) const {
  if (rank_from_host(runtime)) return detail::current_host().net_context().rank_me();
  return resolve_runtime(runtime).rank_me();
}
int get_rank_n_x::call_impl(runtime_t runtime) const {
  if (rank_from_host(runtime)) return detail::current_host().net_context().rank_n();
  return resolve_runtime(runtime).rank_n();
}

device_t get_default_device_x::call_impl(runtime_t runtime) const {
  return device_t(resolve_runtime(runtime).default_device());
}

endpoint_t get_default_endpoint_x::call_impl(device_t device, runtime_t runtime) const {
  detail::runtime_impl_t& rt = resolve_runtime(runtime);
  return endpoint_t(detail::resolve_device(rt, device).default_endpoint());
}

packet_pool_t get_default_packet_pool_x::call_impl(runtime_t runtime) const {
  return packet_pool_t(resolve_runtime(runtime).default_packet_pool());
}

matching_engine_t get_default_matching_engine_x::call_impl(runtime_t runtime) const {
  return matching_engine_t(resolve_runtime(runtime).default_matching_engine());
}

std::size_t get_max_bcopy_size_x::call_impl(packet_pool_t packet_pool, runtime_t runtime) const {
  detail::runtime_impl_t& rt = resolve_runtime(runtime);
  // A header may lead the payload when the tag does not fit the immediate
  // (device_impl_t::bcopy_size_max() says the same for a device's pool).
  return detail::resolve_packet_pool(rt, packet_pool).attr.packet_size -
         sizeof(detail::eager_header_t);
}

// ---- network contexts ----

net_context_t get_default_net_context_x::call_impl(runtime_t runtime) const {
  return net_context_t(resolve_runtime(runtime).default_net_context());
}

net_context_t alloc_net_context_x::call_impl(const attr_net_context_t& attr,
                                             runtime_t runtime) const {
  return net_context_t(resolve_runtime(runtime).alloc_net_context(attr));
}

void free_net_context_x::call_impl(net_context_t* net_context, runtime_t runtime) const {
  if (net_context == nullptr || net_context->p_impl == nullptr) {
    throw std::invalid_argument("free_net_context: net_context is empty (freed twice?)");
  }
  resolve_runtime(runtime).free_net_context(net_context->p_impl);
  net_context->p_impl = nullptr;
}

// ---- devices and endpoints ----

device_t alloc_device_x::call_impl(const attr_device_t& attr, net_context_t net_context,
                                   packet_pool_t packet_pool, runtime_t runtime) const {
  detail::runtime_impl_t& rt = resolve_runtime(runtime);
  if (!net_context.is_empty() && net_context.p_impl->runtime != &rt) {
    throw std::invalid_argument("alloc_device: net_context belongs to another runtime");
  }
  // No pool given and no default one: a raw device (upstream's, for the
  // raw network layer; device_impl.hpp).
  detail::packet_pool_impl_t* pool =
      packet_pool.is_empty() && rt.default_packet_pool() == nullptr
          ? nullptr
          : &detail::resolve_packet_pool(rt, packet_pool);
  return device_t(rt.alloc_device(attr, net_context.p_impl, pool));
}

void free_device_x::call_impl(device_t* device, runtime_t runtime) const {
  if (device == nullptr || device->p_impl == nullptr) {
    throw std::invalid_argument("free_device: device is empty (freed twice?)");
  }
  detail::runtime_impl_t& rt = resolve_runtime(runtime);
  rt.check_live_device(device->p_impl);
  detail::drain_before_close(*device->p_impl);
  rt.free_device(device->p_impl);
  device->p_impl = nullptr;
}

endpoint_t alloc_endpoint_x::call_impl(const attr_endpoint_t& attr, device_t device,
                                       runtime_t runtime) const {
  detail::runtime_impl_t& rt = resolve_runtime(runtime);
  detail::device_impl_t& d = detail::resolve_device(rt, device);
  return endpoint_t(d.alloc_endpoint(attr));
}

void free_endpoint_x::call_impl(endpoint_t* endpoint, runtime_t runtime) const {
  if (endpoint == nullptr || endpoint->p_impl == nullptr) {
    throw std::invalid_argument("free_endpoint: endpoint is empty (freed twice?)");
  }
  (void)resolve_runtime(runtime);
  endpoint->p_impl->device->free_endpoint(endpoint->p_impl);
  endpoint->p_impl = nullptr;
}

// ---- memory ----

mr_t register_memory_x::call_impl(void* address, std::size_t size, device_t device,
                                  runtime_t runtime) const {
  detail::runtime_impl_t& rt = resolve_runtime(runtime);
  detail::device_impl_t& d = detail::resolve_device(rt, device);
  if (address == nullptr) throw std::invalid_argument("register_memory: address = nullptr");
  // A region of no bytes (upstream's programs register every size of a
  // sweep from 0) holds nothing the network could address: it is a handle
  // only, with no registration of the network's and none of the device's
  // share. Posts of 0 bytes with it need none; a put or get of 0 bytes
  // into its rmr moves nothing (rma.cpp, post_empty_access); a peer's
  // access of more bytes finds no registration and is refused.
  if (size == 0) {
    backend::net_mr_t empty;
    empty.base = address;
    return mr_t(rt.adopt_mr(std::make_unique<detail::mr_impl_t>(&d, empty)));
  }
  backend::net_mr_t net_mr;
  // A refusal may be transient (registrations freed by operations that
  // complete during progress): retry a bounded number of times first.
  constexpr int attempts_max = 1024;
  // The program's registration stands until it deregisters: it comes out of
  // the device's standing share, so that the protocol's writes always find
  // one (device_accounting_t::take_standing_registration).
  int attempt = 1;
  bool taken = d.accounting().take_standing_registration();
  // A raw device is never progressed here: its completions are the
  // program's (net_poll_cq), and the protocol holds none of its
  // registrations.
  const auto wait_for_registrations = [&] {
    if (d.raw() || detail::progress_device(d).is_retry()) rt.host().idle("register_memory");
  };
  // Equivalent mutants: bound. attempts_max (1024, not part of the API) only bounds how long
  // a refusal is waited out before register_memory gives up; one attempt more is the same
  // contract with a limit of 1025
  // (tools/mutate_records/2026-11-28-runs-35-59.md, runs 35, 38, 39).
  for (; !taken && attempt < attempts_max; ++attempt) {
    wait_for_registrations();
    taken = d.accounting().take_standing_registration();
  }
  if (!taken) {
    throw std::runtime_error(
        "register_memory: the device's registrations are taken (" +
        std::to_string(d.accounting().standing_registrations_max()) +
        " may stand at once, the program's and rendezvous receives'; the rest of the "
        "network's registrations_max is kept for the protocol's writes); deregister some");
  }
  error_t error = d.net().register_memory(address, size, &net_mr);
  // attempts_max in all, the first loop's included: the error below says so
  // (local_registration_test counts the network's refusals).
  for (; error.is_retry() && attempt < attempts_max; ++attempt) {
    wait_for_registrations();
    error = d.net().register_memory(address, size, &net_mr);
  }
  if (!error.is_done()) {
    d.accounting().return_standing_registration();
    throw std::runtime_error("register_memory: the network refused to register " +
                             std::to_string(size) + " bytes " + std::to_string(attempts_max) +
                             " times (" + error.get_str() + ")");
  }
  return mr_t(rt.adopt_mr(std::make_unique<detail::mr_impl_t>(&d, net_mr)));
}

void deregister_memory_x::call_impl(mr_t* mr, runtime_t runtime) const {
  if (mr == nullptr || detail::resolve_mr("deregister_memory", *mr, nullptr) == nullptr) {
    throw std::invalid_argument("deregister_memory: mr is empty (deregistered twice?)");
  }
  // Taken from the runtime's list first: a copy of a handle deregistered
  // before is refused there, never dereferenced. Then no peer's checked
  // access can pin it any more; those under way finish before it goes.
  std::unique_ptr<detail::mr_impl_t> owned = resolve_runtime(runtime).withdraw_mr(mr->p_impl);
  mr->p_impl = nullptr;
  const std::exception_ptr fault = detail::wait_unpinned(*owned);
  detail::runtime_impl_t::deregister_from_network(*owned);
  if (fault != nullptr) std::rethrow_exception(fault);
}

rmr_t get_rmr_x::call_impl(mr_t mr, runtime_t runtime) const {
  (void)runtime;
  const detail::mr_impl_t* impl = detail::resolve_mr("get_rmr", mr, nullptr);
  if (impl == nullptr) throw std::invalid_argument("get_rmr: mr is empty");
  rmr_t rmr;
  if (impl->holds_no_bytes()) {
    // No key: only accesses of 0 bytes through it succeed (they read
    // none); one of more bytes is refused where it lands, as for any
    // region its target never registered.
    rmr.base = reinterpret_cast<std::uintptr_t>(impl->net_mr.base);
    rmr.mr_base = rmr.base;
    LCI_ASSERT(!rmr.is_empty(), "get_rmr: a region of no bytes without its address");
    return rmr;
  }
  const backend::net_rmr_t net_rmr = impl->device->net().get_rmr(impl->net_mr);
  rmr.base = net_rmr.base;
  rmr.mr_base = net_rmr.base;
  rmr.opaque_rkey = net_rmr.rkey;
  LCI_ASSERT(!rmr.is_empty(), "get_rmr: a registration without base or key");
  LCI_ASSERT(net_rmr.size == impl->net_mr.size, "get_rmr: not the registration's key");
  return rmr;
}

// ---- packet pools and matching engines ----

packet_pool_t alloc_packet_pool_x::call_impl(const attr_packet_pool_t& attr,
                                             runtime_t runtime) const {
  return packet_pool_t(resolve_runtime(runtime).alloc_packet_pool(attr));
}

void free_packet_pool_x::call_impl(packet_pool_t* packet_pool, runtime_t runtime) const {
  if (packet_pool == nullptr || packet_pool->p_impl == nullptr) {
    throw std::invalid_argument("free_packet_pool: packet_pool is empty (freed twice?)");
  }
  resolve_runtime(runtime).free_packet_pool(packet_pool->p_impl);
  packet_pool->p_impl = nullptr;
}

void register_packet_pool_x::call_impl(packet_pool_t packet_pool, device_t device,
                                       runtime_t runtime) const {
  // Packets need no registration on the backends built so far (the sim
  // network reads and writes process memory); the call checks its arguments.
  detail::runtime_impl_t& rt = resolve_runtime(runtime);
  (void)detail::resolve_packet_pool(rt, packet_pool);
  (void)detail::resolve_device(rt, device);
}

void deregister_packet_pool_x::call_impl(packet_pool_t packet_pool, device_t device,
                                         runtime_t runtime) const {
  detail::runtime_impl_t& rt = resolve_runtime(runtime);
  (void)detail::resolve_packet_pool(rt, packet_pool);
  (void)detail::resolve_device(rt, device);
}

void* get_upacket_x::call_impl(packet_pool_t packet_pool, runtime_t runtime) const {
  detail::runtime_impl_t& rt = resolve_runtime(runtime);
  return detail::resolve_packet_pool(rt, packet_pool).pool.get();
}

// `packet` may point anywhere into a packet's payload: a zero-copy active
// message's buffer may start after a header.
void put_upacket_x::call_impl(void* packet, runtime_t runtime) const {
  void* payload = nullptr;
  detail::packet_pool_impl_t* pool =
      resolve_runtime(runtime).packet_pool_containing(packet, &payload);
  if (pool == nullptr) {
    throw std::invalid_argument("put_upacket: packet is not in a packet of this runtime's pools");
  }
  pool->pool.put(payload);
}

matching_engine_t alloc_matching_engine_x::call_impl(const attr_matching_engine_t& attr,
                                                     runtime_t runtime) const {
  return matching_engine_t(resolve_runtime(runtime).alloc_matching_engine(attr));
}

void free_matching_engine_x::call_impl(matching_engine_t* matching_engine,
                                       runtime_t runtime) const {
  if (matching_engine == nullptr || matching_engine->p_impl == nullptr) {
    throw std::invalid_argument("free_matching_engine: matching_engine is empty (freed twice?)");
  }
  resolve_runtime(runtime).free_matching_engine(matching_engine->p_impl);
  matching_engine->p_impl = nullptr;
}

matching_entry_val_t matching_engine_insert_x::call_impl(matching_engine_t matching_engine,
                                                         matching_entry_key_t key,
                                                         matching_entry_val_t value,
                                                         matching_entry_type_t entry_type,
                                                         runtime_t runtime) const {
  detail::runtime_impl_t& rt = resolve_runtime(runtime);
  detail::matching_engine_impl_t& engine = detail::resolve_matching_engine(rt, matching_engine);
  const matching::insert_result_t result = engine.table.insert(key, value, entry_type);
  if (result.kind == matching::insert_kind_t::retry_nomem) {
    throw std::runtime_error("matching_engine_insert: the matching table is full");
  }
  return result.value;
}

}  // namespace lci
