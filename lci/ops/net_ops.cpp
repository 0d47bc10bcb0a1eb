// The raw network layer (docs/api_compat.md, "Raw network layer"): each
// net_* operation is one call of a raw device's backend::net_device_t
// (device_impl.hpp: a device without a packet pool, which the protocol never
// touches). What this file adds to the backend call: the device, endpoint
// and registrations resolved and checked before anything is posted
// (std::invalid_argument naming the operation and the argument), and each
// completion translated into the public net_status_t.
//
// Thread safety: as the backend's: any threads, concurrently.
// Blocking:      never: a busy or full network returns a retry error_t and
//                takes nothing.
// Ownership:     "s" posts copy the payload before they return; the other
//                posts' buffers are the network's until their completion is
//                polled with net_poll_cq, as are net_post_recv's.
// Allocation:    none.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "backends/backend.hpp"
#include "lci/api/lci_config.hpp"
#include "lci/api/lci_generated.hpp"
#include "lci/api/lci_types.hpp"
#include "lci/protocol/protocol.hpp"
#include "lci/runtime/resolve.hpp"
#include "lci/util/assert.hpp"

namespace lci {

const char* get_net_opcode_str(net_opcode_t opcode) {
  switch (opcode) {
    case net_opcode_t::SEND: return "SEND";
    case net_opcode_t::RECV: return "RECV";
    case net_opcode_t::WRITE: return "WRITE";
    case net_opcode_t::REMOTE_WRITE: return "REMOTE_WRITE";
    case net_opcode_t::READ: return "READ";
    case net_opcode_t::ERROR: return "ERROR";
  }
  return "invalid";
}

namespace {

// Completions moved per backend poll; net_poll_cq polls again while the
// network fills whole batches and the caller has room.
constexpr std::size_t poll_batch_max = LCI_BACKEND_MAX_POLLS;

[[noreturn]] void throw_argument(const char* op, const std::string& what) {
  throw std::invalid_argument(std::string(op) + ": " + what);
}

// The raw device an operation runs on (resolve_device with an endpoint).
detail::device_impl_t& raw_device(const char* op, device_t device, endpoint_t endpoint,
                                  runtime_t runtime) {
  detail::runtime_impl_t& rt = detail::resolve_runtime(runtime);
  detail::device_impl_t* resolved = nullptr;
  try {
    resolved = &detail::resolve_device(rt, device, endpoint);
  } catch (const std::invalid_argument& error) {
    throw_argument(op, error.what());
  }
  resolved->require_raw(op);
  return *resolved;
}

// The raw device of a post to `rank`, which checks the rank, a buffer for a
// non-empty payload, and the payload against the device's inject size
// (`injected`: an "s" post) or its max_msg_size.
detail::device_impl_t& peer_post_device(const char* op, int rank, const void* buffer,
                                        std::size_t size, bool injected, device_t device,
                                        endpoint_t endpoint, runtime_t runtime) {
  detail::device_impl_t& d = raw_device(op, device, endpoint, runtime);
  d.runtime()->check_rank(rank, (std::string(op) + ": rank").c_str());
  if (buffer == nullptr && size > 0) {
    throw_argument(op, "buffer = nullptr with size = " + std::to_string(size));
  }
  const backend::net_device_attr_t& limits = d.net().attr();
  const std::size_t size_max = injected ? limits.inject_size_max : limits.max_msg_size;
  if (size > size_max) {
    throw_argument(op, "size = " + std::to_string(size) + ": over the device's " +
                           (injected ? "inject size" : "max_msg_size") + " (" +
                           std::to_string(size_max) + " bytes)");
  }
  return d;
}

// The network's registration of [buffer, buffer + size): `mr` must be a
// registration of `device` that holds it (an empty payload is not checked
// against it).
backend::net_mr_t local_mr(const char* op, const detail::device_impl_t& device, const void* buffer,
                           std::size_t size, mr_t mr) {
  const detail::mr_impl_t* impl = detail::resolve_mr(op, mr, &device);
  if (impl == nullptr) {
    throw_argument(op, "mr is empty (register the buffer with register_memory on the device)");
  }
  const backend::net_mr_t& net_mr = impl->net_mr;
  const auto start = reinterpret_cast<std::uintptr_t>(buffer);
  const auto base = reinterpret_cast<std::uintptr_t>(net_mr.base);
  // Subtractions only: no sum of user values can wrap.
  // Equivalent mutants: bound:0. A start exactly at the registration's end (start - base ==
  // size) fails the next test anyway: size > 0 = net_mr.size - (start - base).
  if (size > 0 &&
      (start < base || start - base > net_mr.size || size > net_mr.size - (start - base))) {
    throw_argument(op, "buffer: the " + std::to_string(size) +
                           " bytes from buffer lie outside mr (" + std::to_string(net_mr.size) +
                           " bytes registered)");
  }
  return net_mr;
}

// Where a put or get lands: `rmr` at `offset`, addressed as post_put addresses it.
detail::net_target_t remote_target(const char* op, int rank, const rmr_t& rmr, std::uint64_t offset,
                                   std::size_t size) {
  if (rmr.is_empty()) throw_argument(op, "rmr is empty");
  return detail::checked_target({op, rank, rmr, offset, "offset", size});
}

// A put or get to `rank`, checked: its device (peer_post_device), its
// local registration (local_mr; none for an injected put: `mr` nullptr),
// and where it lands (remote_target).
struct rma_t {
  detail::device_impl_t& device;
  backend::net_mr_t mr;
  detail::net_target_t target;
};
rma_t checked_rma(const char* op, int rank, const void* buffer, std::size_t size, const mr_t* mr,
                  std::uint64_t offset, const rmr_t& rmr, device_t device, endpoint_t endpoint,
                  runtime_t runtime) {
  detail::device_impl_t& d =
      peer_post_device(op, rank, buffer, size, mr == nullptr, device, endpoint, runtime);
  const backend::net_mr_t net_mr =
      mr == nullptr ? backend::net_mr_t{} : local_mr(op, d, buffer, size, *mr);
  return {d, net_mr, remote_target(op, rank, rmr, offset, size)};
}

net_opcode_t public_opcode(backend::net_opcode_t opcode) {
  switch (opcode) {
    case backend::net_opcode_t::send: return net_opcode_t::SEND;
    case backend::net_opcode_t::recv: return net_opcode_t::RECV;
    case backend::net_opcode_t::write: return net_opcode_t::WRITE;
    case backend::net_opcode_t::remote_write: return net_opcode_t::REMOTE_WRITE;
    case backend::net_opcode_t::read: return net_opcode_t::READ;
    case backend::net_opcode_t::peer_down: break;  // always with a fault: ERROR
  }
  LCI_ASSERT(false, "a completion the public net_opcode_t cannot name");
  return net_opcode_t::ERROR;
}

// A fault (protection, a crashed peer) and a peer report are ERROR: the
// operation failed, or (peer_down: no user_context) the rank died.
net_status_t public_status(const backend::net_status_t& status) {
  LCI_ASSERT(!status.buffer_released, "a raw device was given a receive region");
  if (status.opcode == backend::net_opcode_t::peer_down) {
    LCI_ASSERT(status.fault == backend::net_fault_t::peer_crashed, "a peer report with no fault");
    LCI_ASSERT(status.user_context == nullptr, "a peer report with an operation's context");
  }
  net_status_t out;
  out.opcode = status.fault != backend::net_fault_t::none ? net_opcode_t::ERROR
                                                          : public_opcode(status.opcode);
  out.rank = status.rank;
  out.user_context = status.user_context;
  out.length = status.length;
  out.imm_data = status.imm_data;
  return out;
}

}  // namespace

size_t net_poll_cq_x::call_impl(size_t max_polls, net_status_t* statuses, device_t device,
                                runtime_t runtime) const {
  detail::device_impl_t& d = raw_device("net_poll_cq", device, endpoint_t{}, runtime);
  if (statuses == nullptr && max_polls > 0) {
    throw_argument("net_poll_cq",
                   "statuses = nullptr with max_polls = " + std::to_string(max_polls));
  }
  backend::net_status_t batch[poll_batch_max];
  std::size_t polled = 0;
  // Bounded by max_polls / poll_batch_max + 1 rounds: each takes a full
  // batch or ends the loop.
  while (polled < max_polls) {
    const std::size_t wanted = std::min(poll_batch_max, max_polls - polled);
    const std::size_t got = d.net().poll_comp(batch, wanted);
    LCI_ASSERT(got <= wanted, "the network returned more completions than asked");
    std::transform(batch, batch + got, statuses + polled, public_status);
    polled += got;
    if (got < wanted) break;
  }
  return polled;
}

error_t net_post_recv_x::call_impl(void* buffer, size_t size, mr_t mr, device_t device,
                                   void* user_context, runtime_t runtime) const {
  const char* const op = "net_post_recv";
  detail::device_impl_t& d = raw_device(op, device, endpoint_t{}, runtime);
  if (buffer == nullptr && size > 0) {
    throw_argument(op, "buffer = nullptr with size = " + std::to_string(size));
  }
  return d.net().post_recv(buffer, size, local_mr(op, d, buffer, size, mr), user_context);
}

// The "s" posts take user_context for upstream's signature: a post that
// completes at once reports no completion, and a fault found later comes
// back without it (backends/backend.hpp, "Ownership").
error_t net_post_sends_x::call_impl(int rank, void* buffer, size_t size, device_t device,
                                    endpoint_t endpoint, net_imm_data_t imm_data,
                                    void* user_context, runtime_t runtime) const {
  (void)user_context;
  detail::device_impl_t& d =
      peer_post_device("net_post_sends", rank, buffer, size, true, device, endpoint, runtime);
  return d.net().post_sends(rank, buffer, size, imm_data);
}

error_t net_post_send_x::call_impl(int rank, void* buffer, size_t size, mr_t mr, device_t device,
                                   endpoint_t endpoint, net_imm_data_t imm_data, void* user_context,
                                   runtime_t runtime) const {
  const char* const op = "net_post_send";
  detail::device_impl_t& d =
      peer_post_device(op, rank, buffer, size, false, device, endpoint, runtime);
  return d.net().post_send(rank, buffer, size, local_mr(op, d, buffer, size, mr), imm_data,
                           user_context);
}

error_t net_post_puts_x::call_impl(int rank, void* buffer, size_t size, uint64_t offset, rmr_t rmr,
                                   device_t device, endpoint_t endpoint, void* user_context,
                                   runtime_t runtime) const {
  (void)user_context;  // see net_post_sends
  const rma_t rma = checked_rma("net_post_puts", rank, buffer, size, nullptr, offset, rmr, device,
                                endpoint, runtime);
  return rma.device.net().post_puts(rank, buffer, size, rma.target.offset, rma.target.rmr);
}

error_t net_post_put_x::call_impl(int rank, void* buffer, size_t size, mr_t mr, uint64_t offset,
                                  rmr_t rmr, device_t device, endpoint_t endpoint,
                                  void* user_context, runtime_t runtime) const {
  const rma_t rma =
      checked_rma("net_post_put", rank, buffer, size, &mr, offset, rmr, device, endpoint, runtime);
  return rma.device.net().post_put(rank, buffer, size, rma.mr, rma.target.offset, rma.target.rmr,
                                   user_context);
}

error_t net_post_putImms_x::call_impl(int rank, void* buffer, size_t size, uint64_t offset,
                                      rmr_t rmr, device_t device, endpoint_t endpoint,
                                      net_imm_data_t imm_data, void* user_context,
                                      runtime_t runtime) const {
  (void)user_context;  // see net_post_sends
  const rma_t rma = checked_rma("net_post_putImms", rank, buffer, size, nullptr, offset, rmr,
                                device, endpoint, runtime);
  return rma.device.net().post_putImms(rank, buffer, size, rma.target.offset, rma.target.rmr,
                                       imm_data);
}

error_t net_post_putImm_x::call_impl(int rank, void* buffer, size_t size, mr_t mr, uint64_t offset,
                                     rmr_t rmr, device_t device, endpoint_t endpoint,
                                     net_imm_data_t imm_data, void* user_context,
                                     runtime_t runtime) const {
  const rma_t rma = checked_rma("net_post_putImm", rank, buffer, size, &mr, offset, rmr, device,
                                endpoint, runtime);
  return rma.device.net().post_putImm(rank, buffer, size, rma.mr, rma.target.offset, rma.target.rmr,
                                      imm_data, user_context);
}

error_t net_post_get_x::call_impl(int rank, void* buffer, size_t size, mr_t mr, uint64_t offset,
                                  rmr_t rmr, device_t device, endpoint_t endpoint,
                                  void* user_context, runtime_t runtime) const {
  const rma_t rma =
      checked_rma("net_post_get", rank, buffer, size, &mr, offset, rmr, device, endpoint, runtime);
  return rma.device.net().post_get(rank, buffer, size, rma.mr, rma.target.offset, rma.target.rmr,
                                   user_context);
}

}  // namespace lci
