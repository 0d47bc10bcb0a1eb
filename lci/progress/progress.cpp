#include "lci/progress/progress.hpp"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>

#include "lci/api/lci_config.hpp"
#include "lci/progress/idle_yield.hpp"
#include "lci/protocol/arrival.hpp"
#include "lci/protocol/protocol.hpp"
#include "lci/protocol/request_state.hpp"
#include "lci/runtime/device_impl.hpp"
#include "lci/runtime/runtime_impl.hpp"
#include "lci/util/log.hpp"
#include "lci/wire/control.hpp"

namespace lci::detail {

namespace {

// Completions one progress() call takes from the network.
constexpr std::size_t poll_batch_max = LCI_BACKEND_MAX_POLLS;

// One batch of completions, left uninitialised: poll_comp writes every
// status it returns (backends/backend.hpp), and filling the batch with
// defaults on every call cost about as much as dispatching a message.
union status_batch_t {
  status_batch_t() {}
  backend::net_status_t statuses[poll_batch_max];
};

// The calling OS thread's run of empty progress calls, over all devices
// (one thread waiting on two devices is as idle as one waiting on one).
// initial-exec: a fixed offset from the thread pointer, as the spinlocks'
// count (lci/util/spinlock.hpp).
thread_local idle_yield_t t_idle_yield __attribute__((tls_model("initial-exec")));

// A control message a decoder refused (wire/control.hpp).
[[noreturn]] void throw_corrupt(const char* what, const backend::net_status_t& status,
                                const char* why) {
  throw std::runtime_error(std::string("lci: a corrupt ") + what + " of " +
                           std::to_string(status.length) + " bytes from rank " +
                           std::to_string(status.rank) + ": " + why);
}

// An arrival whose handler found no packet for what it must keep (an
// arrival in a receive region): it waits in the backlog, its bytes held,
// until one is free — the device's back-pressure, which loses nothing.
void dispatch_eager(device_impl_t& device, arrival_t& arrival, msg_type_t type) {
  if (handle_eager(device, arrival, type)) return;
  arrival.detach();
  device_impl_t* const device_ptr = &device;
  (void)device.run_or_backlog([device_ptr, status = arrival.status(), type]() -> error_t {
    arrival_t retried(*device_ptr, status);
    if (handle_eager(*device_ptr, retried, type)) return errorcode_t::done;
    retried.detach();
    return errorcode_t::retry_nopacket;
  });
}

// An RTS of an active message that found its device's pool of requests
// empty waits in the backlog until a finished operation gives one back.
void dispatch_rts(device_impl_t& device, int rank, const rts_t& rts) {
  device_impl_t* const device_ptr = &device;
  (void)device.run_or_backlog([device_ptr, rank, rts]() -> error_t {
    return handle_rts(*device_ptr, rank, rts) ? errorcode_t::done : errorcode_t::retry_nomem;
  });
}

void dispatch_rma_rts(device_impl_t& device, int rank, const rma_rts_t& message) {
  device_impl_t* const device_ptr = &device;
  (void)device.run_or_backlog([device_ptr, rank, message]() -> error_t {
    return handle_rma_rts(*device_ptr, rank, message) ? errorcode_t::done
                                                      : errorcode_t::retry_nomem;
  });
}

void dispatch_arrival(device_impl_t& device, const backend::net_status_t& status) {
  const msg_type_t type = imm_type(status.imm_data);
  if (status.opcode == backend::net_opcode_t::remote_write) {
    if (type == msg_type_t::rdv_data) {
      handle_rdv_done(device, status.rank, imm_value(status.imm_data));
    } else {
      handle_signal(device, status, type);
    }
    return;
  }
  // A region the network is done with (its last message, or no message):
  // counted before the message's own release, in any order (recv_regions.hpp).
  if (status.buffer_released) device.receives().release_region_posting(status);
  if (status.buffer == nullptr) {
    LCI_ASSERT(status.buffer_released && status.length == 0,
               "a receive completion without its buffer");
    return;
  }
  arrival_t arrival(device, status);  // gives the bytes back unless kept
  switch (type) {
    case msg_type_t::eager_send:
    case msg_type_t::eager_am:
      dispatch_eager(device, arrival, type);
      return;
    case msg_type_t::rts: {
      const std::size_t size_max = device.net().attr().max_msg_size;
      rts_t rts;
      const char* why = decode_rts(status.buffer, status.length, size_max, &rts);
      if (why == nullptr && (rts.kind == rts_kind_t::put || rts.kind == rts_kind_t::get)) {
        rma_rts_t message;
        bool is_inline = false;
        why = decode_rma_rts(status.buffer, status.length, size_max, &message,
                                       &is_inline);
        if (why == nullptr && is_inline) {  // done here, while the arrival holds the data
          handle_inline_put(device, status.rank, message,
                            static_cast<const std::byte*>(status.buffer) + sizeof(message));
          return;  // the arrival gives the bytes back
        }
        arrival.release();
        if (why != nullptr) throw_corrupt("RTS", status, why);
        dispatch_rma_rts(device, status.rank, message);
        return;
      }
      arrival.release();
      if (why != nullptr) throw_corrupt("RTS", status, why);
      dispatch_rts(device, status.rank, rts);
      return;
    }
    case msg_type_t::rtr: {
      rtr_t rtr;
      const char* why = decode_rtr(status.buffer, status.length, &rtr);
      arrival.release();
      if (why != nullptr) throw_corrupt("RTR", status, why);
      handle_rtr(device, status.rank, rtr);
      return;
    }
    case msg_type_t::rdv_data: {  // as a message: a chunk of a copied rendezvous
      rdv_chunk_t chunk;
      const char* why = imm_has_header(status.imm_data)
                            ? decode_rdv_chunk(status.buffer, status.length, &chunk)
                            : "rendezvous data as a message without its chunk header";
      if (why != nullptr) throw_corrupt("rendezvous chunk", status, why);
      handle_rdv_chunk(device, status.rank, imm_value(status.imm_data), chunk,
                       static_cast<const std::byte*>(status.buffer) + sizeof(chunk),
                       status.length - sizeof(chunk));
      return;  // the arrival gives the packet back
    }
    case msg_type_t::fin:
      arrival.release();
      handle_rdv_done(device, status.rank, imm_value(status.imm_data));
      return;
    case msg_type_t::put_signal:  // as a message: a put of no bytes
    case msg_type_t::get_signal:
      arrival.release();
      handle_signal(device, status, type);
      return;
    default:
      throw std::logic_error("lci: a message of unknown type arrived");
  }
}

// A completion (normal or faulted) of an operation the device posted with a
// request as its user_context (device_accounting_t::note_network_post). An
// injected post's fault has opcode send or write too, but no request.
bool ends_network_post(const backend::net_status_t& status) {
  const bool local = status.opcode == backend::net_opcode_t::send ||
                     status.opcode == backend::net_opcode_t::write ||
                     status.opcode == backend::net_opcode_t::read;
  return local && status.user_context != nullptr;
}

// A completion of a receive the device pre-posted with a packet: counted
// by progress_device (device_receives_t::note_receives_consumed) for the batch.
bool takes_posted_packet(const backend::net_status_t& status) {
  return status.fault == backend::net_fault_t::none &&
         status.opcode == backend::net_opcode_t::recv && status.buffer != nullptr &&
         !recv_regions_t::is_region_arrival(status);
}

void dispatch_local(device_impl_t& device, const backend::net_status_t& status) {
  auto* request = static_cast<request_t*>(status.user_context);
  LCI_ASSERT(request != nullptr, "a local completion without its request");
  hand_over(request, request_owner_t::network, request_owner_t::thread);
  switch (state_of(request).kind) {
    case request_kind_t::send_eager:
    case request_kind_t::put:
      complete_request(request, errorcode_t::done);
      return;
    case request_kind_t::send_rdv:
      handle_rdv_write_done(device, request);
      return;
    case request_kind_t::get:
      handle_get_done(device, request);
      return;
    case request_kind_t::recv:
      break;
  }
  LCI_ASSERT(false, "a receive request in a local completion");
}

// A protection fault of a user's put or get (a stale key: the target
// deregistered the region; bounds were checked when it was posted,
// lci/protocol/rma.cpp) belongs to that one operation: the peer and the
// connection are fine (the backend keeps or restores it), so its completion
// object hears it as fatal and nothing is thrown (a COMP_NULL one's is the
// post's own, which returns the fatal status). Without a request (an
// injected put, done at once), nobody would hear of it: it is thrown as
// other faults are.
bool reported_to_its_operation(const backend::net_status_t& status) {
  if (status.fault != backend::net_fault_t::protection || status.user_context == nullptr) {
    return false;
  }
  const auto* request = static_cast<const request_t*>(status.user_context);
  const bool user_rma =
      state_of(request).kind == request_kind_t::put || state_of(request).kind == request_kind_t::get;
  LCI_ASSERT(!user_rma || request->comp != nullptr, "a put or get without a completion object");
  return user_rma;
}

void dispatch(device_impl_t& device, const backend::net_status_t& status) {
  LCI_LOG(debug, "progress", "rank %d: %s rank %d, %zu bytes%s%s\n", device.runtime()->rank_me(),
          backend::get_net_opcode_str(status.opcode), status.rank, status.length,
          status.fault != backend::net_fault_t::none ? ", fault: " : "",
          status.fault != backend::net_fault_t::none ? backend::describe_fault(status).c_str() : "");
  if (status.fault != backend::net_fault_t::none) {
    if (status.opcode == backend::net_opcode_t::peer_down) {
      LCI_ASSERT(status.fault == backend::net_fault_t::peer_crashed, "a peer report, not a crash");
    }
    const bool reported = reported_to_its_operation(status);
    // The operation will never complete normally: its completion object
    // hears of it (fatal); unless that is all (above), the fault is thrown
    // with rank and address.
    if (status.user_context != nullptr) {
      auto* request = static_cast<request_t*>(status.user_context);
      hand_over(request, request_owner_t::network, request_owner_t::thread);
      complete_request(request, errorcode_t::fatal);
    }
    if (reported) return;
    // A dead peer (an operation's fault, or the network's own peer_down
    // report) fails everything waiting on it, and is thrown once per
    // runtime: later faults naming it only complete their operations. Not
    // thrown while this rank leaves: the peer has most likely left too,
    // and the leaving barrier tells a crash apart (leave_runtime()).
    if (status.fault == backend::net_fault_t::peer_crashed &&
        (!device.runtime()->fail_peer(status.rank) || device.runtime()->leaving())) {
      return;
    }
    if (status.fault == backend::net_fault_t::peer_crashed) {
      throw peer_failure_error(status.rank, "lci: " + backend::describe_fault(status));
    }
    throw std::runtime_error("lci: " + backend::describe_fault(status));
  }
  LCI_ASSERT(status.opcode != backend::net_opcode_t::peer_down, "a peer report with no fault");
  if (status.opcode == backend::net_opcode_t::recv ||
      status.opcode == backend::net_opcode_t::remote_write) {
    dispatch_arrival(device, status);
  } else {
    dispatch_local(device, status);
  }
}

// Marks the calling thread as inside completion dispatch, refusing a
// progress() called from a handler. The depth is looked up again on exit
// rather than kept by reference: polling and handlers reach scheduling
// points, and a host may move its per-thread records meanwhile (the
// simulator grows a table of per-fiber records when a new fiber first asks).
class dispatch_guard_t {
 public:
  explicit dispatch_guard_t(host_t& host) : host_(host) {
    unsigned& depth = host.dispatch_depth();
    if (depth != 0) {
      throw std::logic_error(
          "progress() called from inside a completion handler (handlers must not call "
          "progress; post from the handler and progress from the caller's loop)");
    }
    ++depth;
  }
  ~dispatch_guard_t() { --host_.dispatch_depth(); }
  dispatch_guard_t(const dispatch_guard_t&) = delete;
  dispatch_guard_t& operator=(const dispatch_guard_t&) = delete;

 private:
  host_t& host_;
};

}  // namespace

error_t progress_device(device_impl_t& device) {
  // A raw device's completions are the program's (net_poll_cq).
  device.require_packet_pool("progress");
  dispatch_guard_t guard(device.runtime()->host());
  bool progressed = device.backlog().drain();
  if (progressed) device.runtime()->host().note_progress();
  status_batch_t batch;
  backend::net_status_t* const statuses = batch.statuses;
  const std::size_t polled = device.net().poll_comp(statuses, poll_batch_max);
  std::exception_ptr first_error;
  std::size_t packets_consumed = 0;
  std::size_t posts_ended = 0;
  for (std::size_t i = 0; i < polled; ++i) {
    if (takes_posted_packet(statuses[i])) {
      device.receives().note_receive_taken(statuses[i].buffer);
      ++packets_consumed;
    }
    if (ends_network_post(statuses[i])) ++posts_ended;
    try {
      dispatch(device, statuses[i]);
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  device.receives().note_receives_consumed(packets_consumed);
  device.accounting().note_network_completions(posts_ended);
  progressed = device.receives().replenish() || progressed || polled > 0;
  if (first_error) std::rethrow_exception(first_error);
  // Read once per process (LCI_PROGRESS_POLLS_BEFORE_YIELD).
  static const std::uint32_t polls_before_yield_max = polls_before_yield();
  if (t_idle_yield.note(progressed, polls_before_yield_max)) {
    device.runtime()->host().yield_when_idle();
  }
  return progressed ? errorcode_t::done : errorcode_t::retry;
}

void drain_before_close(device_impl_t& device) {
  // A network that no longer runs would never take the steps: they are
  // dropped with the device.
  host_t& host = device.runtime()->host();
  while ((device.backlog().steps_left() || device.accounting().network_posts_left()) &&
         host.network_running()) {
    try {
      if (progress_device(device).is_retry()) host.idle("device backlog before close");
    } catch (const std::exception&) {
      // Teardown: a fault reported now has no one left to hear it.
    }
  }
}

std::exception_ptr wait_unpinned(mr_impl_t& mr) {
  host_t& host = mr.device->runtime()->host();
  std::exception_ptr fault;
  // acquire: pairs with device_impl_t::release_pin, so that the last
  // access's bytes have moved before the registration goes.
  while (mr.pins.load(util::mo_acquire) != 0 && host.network_running()) {
    try {
      if (progress_device(*mr.device).is_retry()) host.idle("deregister_memory: peers' accesses");
    } catch (const std::logic_error&) {
      return std::current_exception();  // progress() from a handler
    } catch (const std::exception&) {
      if (fault == nullptr) fault = std::current_exception();
    }
  }
  return fault;
}

void drain_devices(runtime_impl_t& runtime) {
  for (device_impl_t* device : runtime.devices()) drain_before_close(*device);
}

}  // namespace lci::detail
