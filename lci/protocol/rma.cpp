// RMA put and get (paper §4.3: mapped directly to the network's RDMA), with
// an optional remote completion: a put's immediate data signals the target's
// rcomp; a get is followed by a small get_signal message (no network offers
// RDMA read with notification). An access of no bytes is no RDMA at all: its
// signal, if any, is a message (post_empty_access).
#include <cstdint>
#include <stdexcept>
#include <string>

#include "lci/comp/comp_impl.hpp"
#include "lci/protocol/protocol.hpp"
#include "lci/runtime/device_impl.hpp"
#include "lci/runtime/runtime_impl.hpp"
#include "lci/util/assert.hpp"

namespace lci::detail {

// Subtractions and checked sums only: no sum of user values wraps. An
// access is addressed from mr_base when the rmr_t names it (as get_rmr
// fills it), so that a moved base reaches networks that take offsets into
// the region (ofi's tcp) as well as those that take addresses; an rmr_t
// with mr_base 0 (built by hand with base and key) is addressed from base.
net_target_t checked_target(const remote_access_t& access) {
  const rmr_t& rmr = access.rmr;
  std::uint64_t into = 0;
  std::uintptr_t region = rmr.base;
  if (rmr.mr_base != 0) {
    if (rmr.base < rmr.mr_base) {
      throw std::invalid_argument(std::string(access.op) + ": rmr.base = " +
                                  std::to_string(rmr.base) + " lies below rmr.mr_base = " +
                                  std::to_string(rmr.mr_base) + " (rank " +
                                  std::to_string(access.rank) + "'s registration)");
    }
    into = rmr.base - rmr.mr_base;
    region = rmr.mr_base;
  }
  if (access.disp > UINT64_MAX - into || access.size > UINT64_MAX - into - access.disp) {
    throw std::invalid_argument(std::string(access.op) + ": " + access.disp_name + " = " +
                                std::to_string(access.disp) + " with size = " +
                                std::to_string(access.size) + " from rmr.base ends past the " +
                                "end of memory");
  }
  const net_target_t target{{region, rmr.opaque_rkey, 0}, into + access.disp};
  LCI_ASSERT(target.offset >= access.disp, "an offset below the displacement");
  return target;
}

namespace {

// post_put's and post_get's access, checked (checked_target()).
net_target_t post_target(const char* op, const post_args_t& args) {
  return checked_target({op, args.rank, args.rmr, args.remote_disp, "remote_disp", args.size});
}

// The immediate value of a put/get with a remote completion.
std::uint32_t signal_imm(const post_args_t& args, msg_type_t type) {
  const attr_runtime_t& attr = args.device->runtime()->attr();
  msg_fields_t fields;
  fields.rcomp = args.remote_comp;
  fields.tag = args.tag;
  std::uint32_t value = 0;
  if (!pack_imm_value(type, fields, attr.imm_nbits_tag, attr.imm_nbits_rcomp, &value)) {
    throw std::invalid_argument(
        "remote_comp = " + std::to_string(args.remote_comp) + " with tag = " +
        std::to_string(args.tag) + ": does not fit the immediate data (imm_nbits_rcomp = " +
        std::to_string(attr.imm_nbits_rcomp) + ")");
  }
  return make_imm(type, value);
}

// Registers the local buffer unless the user gave an mr, no byte moves (a
// network registers no empty region) or the network needs no local
// registration; false on retry.
bool ensure_registered(device_impl_t& device, request_t* request, error_t* error) {
  if (!request->mr.is_empty() || request->status.size == 0) return true;
  if (!device.net().attr().requires_local_mr) return true;
  *error = device.net().register_memory(request->status.buffer, request->status.size,
                                        &request->owned_mr);
  if (!error->is_done()) return false;
  request->mr = request->owned_mr;
  return true;
}

status_t abandon(device_impl_t& device, request_t* request, error_t error) {
  if (!request->owned_mr.is_empty()) device.net().deregister_memory(&request->owned_mr);
  device_impl_t::give_back(request);
  return status_t(error);
}

// A put or get of no bytes moves nothing, so it never reaches the network's
// RMA: no key is read (a registration of 0 bytes has none, and a network
// may check keys even for an empty transfer). It is done at once; its
// remote completion, if any, travels as a signal message (`imm`, 0 for
// none), which handle_signal reports with size 0.
status_t post_empty_access(const post_args_t& args, std::uint32_t imm) {
  LCI_ASSERT(args.size == 0, "an access with bytes to move taken for an empty one");
  if (imm != 0) {
    const error_t error = send_control(*args.device, args.rank, nullptr, 0, imm);
    if (!error.is_done()) return status_t(error);
  }
  return finish_in_post(args, status_of(args));
}

}  // namespace

// A put or get addresses memory a peer registered, from user input; rmr_t
// does not carry the region's size, so bounds are checked at the target:
// by the network where a bad access fails alone (a NIC's protection fault,
// the simulator's), else by the target's runtime before any byte moves
// (rma_checked.cpp). Either way a fault (outside the registration, a stale
// key) completes that request fatal (lci/progress/progress.cpp).
status_t post_put(const post_args_t& args) {
  const net_target_t target = post_target("post_put", args);
  device_impl_t& device = *args.device;
  backend::net_device_t& net = device.net();
  const bool signal = args.remote_comp != 0;
  // Refused alike on every network, though a checked put needs no imm.
  const std::uint32_t imm = signal ? signal_imm(args, msg_type_t::put_signal) : 0;
  if (args.size == 0) return post_empty_access(args, imm);
  if (!net.attr().bad_rkey_fails_alone) return post_checked_put(args, target);
  // Inject completes at once, before the data lands: only for the memory
  // semantic (the network semantic waits for the write's completion).
  if (args.size <= device.inject_size_max() && args.mr.is_empty() &&
      args.comp_semantic == comp_semantic_t::memory) {
    const error_t error = signal ? net.post_putImms(args.rank, args.buffer, args.size,
                                                    target.offset, target.rmr, imm)
                                 : net.post_puts(args.rank, args.buffer, args.size,
                                                 target.offset, target.rmr);
    if (!error.is_done()) return status_t(error);
    return finish_in_post(args, status_of(args));
  }
  request_t* request = new_request(args, request_kind_t::put);
  if (request == nullptr) return status_t(errorcode_t::retry_nomem);
  error_t error;
  if (!ensure_registered(device, request, &error)) return abandon(device, request, error);
  hand_over(request, request_owner_t::thread, request_owner_t::network);
  error = signal ? net.post_putImm(args.rank, args.buffer, args.size, request->mr,
                                   target.offset, target.rmr, imm, request)
                 : net.post_put(args.rank, args.buffer, args.size, request->mr, target.offset,
                                target.rmr, request);
  if (!error.is_done() && !error.is_posted()) return abandon(device, request, error);
  device.accounting().note_network_post();
  return status_t(errorcode_t::posted);
}

status_t post_get(const post_args_t& args) {
  const net_target_t target = post_target("post_get", args);
  device_impl_t& device = *args.device;
  const bool signal = args.remote_comp != 0;
  const std::uint32_t imm = signal ? signal_imm(args, msg_type_t::get_signal) : 0;
  if (args.size == 0) return post_empty_access(args, imm);
  if (!device.net().attr().bad_rkey_fails_alone) return post_checked_get(args, target);
  request_t* request = new_request(args, request_kind_t::get);
  if (request == nullptr) return status_t(errorcode_t::retry_nomem);
  state_of(request).signal_imm = imm;
  error_t error;
  if (!ensure_registered(device, request, &error)) return abandon(device, request, error);
  hand_over(request, request_owner_t::thread, request_owner_t::network);
  error = device.net().post_get(args.rank, args.buffer, args.size, request->mr, target.offset,
                                target.rmr, request);
  if (!error.is_done() && !error.is_posted()) return abandon(device, request, error);
  device.accounting().note_network_post();
  return status_t(errorcode_t::posted);
}

void handle_get_done(device_impl_t& device, request_t* request) {
  if (state_of(request).signal_imm != 0) {
    device_impl_t* device_ptr = &device;
    const int rank = request->status.rank;
    const std::uint32_t imm = state_of(request).signal_imm;
    (void)device.run_or_backlog([device_ptr, rank, imm]() -> error_t {
      return send_control(*device_ptr, rank, nullptr, 0, imm);
    });
  }
  complete_request(request, errorcode_t::done);
}

void handle_signal(device_impl_t& device, const backend::net_status_t& net_status,
                   msg_type_t type) {
  runtime_impl_t& runtime = *device.runtime();
  const attr_runtime_t& attr = runtime.attr();
  const msg_fields_t fields = unpack_imm_value(
      type, imm_value(net_status.imm_data), attr.imm_nbits_tag, attr.imm_nbits_rcomp);
  comp_impl_t* comp = runtime.rcomp_target(fields.rcomp);
  if (comp == nullptr) {
    throw_unregistered_rcomp("a remote completion", net_status.rank, fields.rcomp, "");
  }
  status_t status;
  status.error = errorcode_t::done;
  status.rank = net_status.rank;
  status.tag = fields.tag;
  status.size = type == msg_type_t::put_signal ? net_status.length : 0;
  comp->signal(status);
}

}  // namespace lci::detail
