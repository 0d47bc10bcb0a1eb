#include "backends/shm/shm_device.hpp"

#include <signal.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "lci/util/spinlock.hpp"
#include "lci/util/try_lock.hpp"

namespace lci::backend::shm {

namespace {

// The low byte of a message's kind; the generation of its sender's device
// is the rest (generation_bits).
enum class wire_kind_t : std::uint32_t {
  inline_send = 1,  // the payload is the message
  fragment = 2,     // fragment_ref_t: the message is in the sender's pool
  signal = 3,       // signal_t: a putImm's data is in place
  nop = 4,          // a reserved slot whose put failed: nothing to deliver
};
constexpr std::uint32_t kind_bits = 8;
constexpr std::uint32_t kind_mask = (std::uint32_t{1} << kind_bits) - 1;
constexpr std::uint32_t generation_mask = (std::uint32_t{1} << (32 - kind_bits)) - 1;

struct fragment_ref_t {
  std::uint32_t index;
  std::uint32_t length_bytes;
};
struct signal_t {
  std::uint64_t length_bytes;
};

wire_kind_t kind_of(const wire_message_t& message) {
  return static_cast<wire_kind_t>(message.header.kind & kind_mask);
}

std::uint32_t make_kind(wire_kind_t kind, std::uint32_t generation) {
  return static_cast<std::uint32_t>(kind) | ((generation & generation_mask) << kind_bits);
}

// The largest put or get (as the ofi backend's: a 32-bit length).
constexpr std::size_t msg_size_cap = std::numeric_limits<std::uint32_t>::max();

std::size_t round_up(std::size_t bytes, std::size_t unit) { return (bytes + unit - 1) / unit * unit; }

queue_params_t queue_params(int local_rank_n) {
  queue_params_t params;
  params.slot_bytes = queue_slot_bytes;
  params.slots_count = queue_slots_count;
  params.producers_max = static_cast<std::uint32_t>(local_rank_n);
  return params;
}

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

// Copies size bytes between our [local, +size) and pid's [remote, +size);
// 0 on success, else the errno (a transfer that stops short: EFAULT).
int cma_transfer(pid_t pid, void* local, std::uintptr_t remote, std::size_t size, bool write) {
  std::size_t done = 0;
  while (done < size) {
    iovec local_iov{static_cast<char*>(local) + done, size - done};
    iovec remote_iov{reinterpret_cast<void*>(remote + done), size - done};
    const ssize_t moved = write ? ::process_vm_writev(pid, &local_iov, 1, &remote_iov, 1, 0)
                                : ::process_vm_readv(pid, &local_iov, 1, &remote_iov, 1, 0);
    if (moved < 0) return errno;
    if (moved == 0) return EFAULT;
    done += static_cast<std::size_t>(moved);
  }
  return 0;
}

// A queue of at most `capacity` values, allocated once: the data path
// allocates nothing. The caller checks room (full() is a logic error).
template <typename T>
class fixed_ring_t {
 public:
  explicit fixed_ring_t(std::size_t capacity) : values_(std::max<std::size_t>(capacity, 1)) {}
  bool empty() const { return size_ == 0; }
  bool full() const { return size_ == values_.size(); }
  std::size_t size() const { return size_; }
  T& front() { return values_[first_]; }
  void push_back(const T& value) {
    LCI_ASSERT(!full(), "shm device: a fixed ring overflows");
    values_[(first_ + size_++) % values_.size()] = value;
  }
  void push_front(const T& value) {
    LCI_ASSERT(!full(), "shm device: a fixed ring overflows");
    first_ = (first_ + values_.size() - 1) % values_.size();
    values_[first_] = value;
    ++size_;
  }
  void pop_front() {
    first_ = (first_ + 1) % values_.size();
    --size_;
  }

 private:
  std::vector<T> values_;
  std::size_t first_ = 0;
  std::size_t size_ = 0;
};

net_status_t local_status(net_opcode_t opcode, int rank, std::size_t length, void* user_context) {
  net_status_t status;
  status.opcode = opcode;
  status.rank = rank;
  status.length = length;
  status.user_context = user_context;
  return status;
}

class shm_device_t final : public net_device_t {
 public:
  shm_device_t(shm_context_t& context, const net_device_attr_t& requested, int slot,
               std::uint32_t generation, std::deque<wire_message_t> early);
  ~shm_device_t() override { context_.release_slot(slot_); }

  const net_device_attr_t& attr() const override { return attr_; }
  error_t post_recv(void* buffer, std::size_t size, net_mr_t mr, void* user_context) override;
  error_t post_recv_multi(void* buffer, std::size_t size, void* user_context) override;
  error_t post_sends(int rank, const void* buffer, std::size_t size,
                     net_imm_data_t imm_data) override {
    return send("post_sends", rank, buffer, size, imm_data, nullptr, false);
  }
  error_t post_send(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                    net_imm_data_t imm_data, void* user_context) override {
    (void)mr;
    return send("post_send", rank, buffer, size, imm_data, user_context, true);
  }
  error_t post_puts(int rank, const void* buffer, std::size_t size, std::uint64_t offset,
                    net_rmr_t rmr) override {
    return rma({"post_puts", rank, const_cast<void*>(buffer), size, offset, rmr, nullptr,
                net_opcode_t::write, false, false, 0});
  }
  error_t post_put(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                   std::uint64_t offset, net_rmr_t rmr, void* user_context) override {
    (void)mr;
    return rma({"post_put", rank, const_cast<void*>(buffer), size, offset, rmr, user_context,
                net_opcode_t::write, true, false, 0});
  }
  error_t post_putImms(int rank, const void* buffer, std::size_t size, std::uint64_t offset,
                       net_rmr_t rmr, net_imm_data_t imm_data) override {
    return rma({"post_putImms", rank, const_cast<void*>(buffer), size, offset, rmr, nullptr,
                net_opcode_t::write, false, true, imm_data});
  }
  error_t post_putImm(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                      std::uint64_t offset, net_rmr_t rmr, net_imm_data_t imm_data,
                      void* user_context) override {
    (void)mr;
    return rma({"post_putImm", rank, const_cast<void*>(buffer), size, offset, rmr, user_context,
                net_opcode_t::write, true, true, imm_data});
  }
  error_t post_get(int rank, void* buffer, std::size_t size, net_mr_t mr, std::uint64_t offset,
                   net_rmr_t rmr, void* user_context) override {
    (void)mr;
    return rma({"post_get", rank, buffer, size, offset, rmr, user_context, net_opcode_t::read,
                true, false, 0});
  }
  std::size_t poll_comp(net_status_t* statuses, std::size_t statuses_max) override;
  error_t register_memory(void* address, std::size_t size, net_mr_t* mr) override;
  void deregister_memory(net_mr_t* mr) override { *mr = net_mr_t(); }
  net_rmr_t get_rmr(net_mr_t mr) const override;

 private:
  struct rma_t {
    const char* op;
    int rank;
    void* buffer;
    std::size_t size;
    std::uint64_t offset;
    net_rmr_t rmr;
    void* user_context;
    net_opcode_t opcode;
    bool completes;  // a non-"s" post: a completion on success too
    bool signals;    // putImm: a remote_write at the target
    net_imm_data_t imm_data;
  };
  struct posted_recv_t {
    void* buffer;
    std::size_t size;
    void* user_context;
  };

  static net_device_attr_t resolve(shm_context_t& context, const net_device_attr_t& requested,
                                   int slot);
  // Checks the target; -1 when it is dead (the post then fails with
  // peer_crashed), else its local rank.
  int check_target(const char* op, int rank, const void* buffer, std::size_t size,
                   std::size_t size_max) const;
  error_t send(const char* op, int rank, const void* buffer, std::size_t size,
               net_imm_data_t imm_data, void* user_context, bool completes);
  error_t rma(const rma_t& post);
  // Under lock_: whether the completion ring has room for `count` more.
  bool ring_has_room(std::size_t count) const {
    return ring_.size() + count <= attr_.net_max_cqes;
  }
  void complete(const net_status_t& status) { ring_.push_back(status); }
  void fail_dead(int rank, void* user_context, net_opcode_t opcode);
  // A free fragment of this device's pool, or fragments_per_pool.
  std::uint32_t find_fragment();
  void report_deaths();
  // Holds or drops a message of another generation; false for ours.
  bool route_other_generation(const wire_message_t& message);
  // Delivers one message of ours into `status`; false when it carries
  // nothing to report (a nop).
  bool deliver(const wire_message_t& message, net_status_t& status);
  void free_fragment(const wire_message_t& message, const fragment_ref_t& ref);
  bool next_message(wire_message_t& message);

  shm_context_t& context_;
  const int slot_;
  const std::uint32_t generation_;
  const int local_rank_me_;
  const net_device_attr_t attr_;
  util::spinlock_t lock_;  // guards everything below
  // Local completions: net_max_cqes for posts, and room for one peer_down
  // per local rank.
  fixed_ring_t<net_status_t> ring_;
  fixed_ring_t<posted_recv_t> recvs_;  // at most net_max_recvs
  // Popped but not delivered yet: held for this device before it existed,
  // or the one waiting for a receive buffer (taken from here first, so
  // one more than were held).
  fixed_ring_t<wire_message_t> early_;
  std::vector<bool> reported_dead_;  // by local rank
  std::uint32_t fragment_cursor_ = 0;
};

shm_device_t::shm_device_t(shm_context_t& context, const net_device_attr_t& requested, int slot,
                           std::uint32_t generation, std::deque<wire_message_t> early)
    : context_(context),
      slot_(slot),
      generation_(generation & generation_mask),
      local_rank_me_(context.locality().local_rank_me),
      attr_(resolve(context, requested, slot)),
      ring_(attr_.net_max_cqes + context.locality().local_ranks.size()),
      recvs_(attr_.net_max_recvs),
      early_(early.size() + 1),
      reported_dead_(context.locality().local_ranks.size(), false) {
  for (const wire_message_t& message : early) early_.push_back(message);
}

net_device_attr_t shm_device_t::resolve(shm_context_t& context,
                                          const net_device_attr_t& requested, int slot) {
  const net_device_attr_t defaults = context.device_defaults();
  net_device_attr_t attr;
  // put and get move any size (CMA); a send is held to a fragment.
  attr.max_msg_size = requested.max_msg_size != 0 ? std::min(requested.max_msg_size, msg_size_cap)
                                                  : msg_size_cap;
  attr.inject_size_max = context.queue(context.locality().local_rank_me, slot).payload_bytes_max();
  attr.supports_put_imm = true;
  attr.requires_local_mr = false;
  attr.bad_rkey_fails_alone = false;  // CMA cannot tell a stale key
  attr.net_max_sends = queue_slots_count;
  attr.net_max_recvs =
      requested.net_max_recvs != 0 ? requested.net_max_recvs : defaults.net_max_recvs;
  attr.net_max_cqes = requested.net_max_cqes != 0 ? requested.net_max_cqes : defaults.net_max_cqes;
  attr.supports_multi_recv = false;
  return attr;
}

error_t shm_device_t::post_recv(void* buffer, std::size_t size, net_mr_t mr,
                                void* user_context) {
  (void)mr;
  return util::try_locked(lock_, [&]() -> error_t {
    if (recvs_.size() >= attr_.net_max_recvs) return errorcode_t::retry_nomem;
    recvs_.push_back({buffer, size, user_context});
    return errorcode_t::done;
  });
}

error_t shm_device_t::post_recv_multi(void* buffer, std::size_t size, void* user_context) {
  (void)buffer;
  (void)size;
  (void)user_context;
  throw std::logic_error("post_recv_multi: the shm device has no multi-receive buffers");
}

int shm_device_t::check_target(const char* op, int rank, const void* buffer, std::size_t size,
                               std::size_t size_max) const {
  check_post_target(op, rank, context_.rank_n(), buffer, size, size_max);
  const int local_rank = context_.local_rank_of(rank);
  if (local_rank < 0) {
    throw std::invalid_argument(std::string(op) + ": rank " + std::to_string(rank) +
                                " is not on this node (the shm device reaches only local ranks)");
  }
  return context_.is_dead(local_rank) ? -1 : local_rank;
}

void shm_device_t::fail_dead(int rank, void* user_context, net_opcode_t opcode) {
  net_status_t status = local_status(opcode, rank, 0, user_context);
  status.fault = net_fault_t::peer_crashed;
  complete(status);
}

std::uint32_t shm_device_t::find_fragment() {
  for (std::uint32_t i = 0; i < fragments_per_pool; ++i) {
    const std::uint32_t index = (fragment_cursor_ + i) % fragments_per_pool;
    // acquire: pairs with the receiver's release once it copied the
    // fragment out, so our next writes come after its reads.
    if (context_.fragment_busy(local_rank_me_, slot_, index).load(util::mo_acquire) == 0) {
      fragment_cursor_ = index + 1;
      return index;
    }
  }
  return fragments_per_pool;
}

error_t shm_device_t::send(const char* op, int rank, const void* buffer, std::size_t size,
                           net_imm_data_t imm_data, void* user_context, bool completes) {
  const int local_rank = check_target(
      op, rank, buffer, size,
      completes ? std::min(attr_.max_msg_size, fragment_bytes) : attr_.inject_size_max);
  return util::try_locked(lock_, [&]() -> error_t {
    // An "s" post completes only on a fault; keep room for one either way.
    if (!ring_has_room(1)) return errorcode_t::retry_nomem;
    // A post with a completion is posted: the completion reports its end.
    const error_t accepted = completes ? errorcode_t::posted : errorcode_t::done;
    if (local_rank < 0) {
      fail_dead(rank, completes ? user_context : nullptr, net_opcode_t::send);
      return accepted;
    }
    queue_t& queue = context_.queue(local_rank, slot_);
    const auto producer = static_cast<std::uint32_t>(local_rank_me_);
    if (size <= attr_.inject_size_max) {
      if (queue.push(producer, make_kind(wire_kind_t::inline_send, generation_), imm_data, buffer,
                     static_cast<std::uint32_t>(size)) != queue_status_t::ok) {
        return errorcode_t::retry_nomem;
      }
    } else {
      const std::uint32_t index = find_fragment();
      if (index == fragments_per_pool) return errorcode_t::retry_nomem;
      reservation_t reservation;
      if (queue.reserve(producer, reservation) != queue_status_t::ok) {
        return errorcode_t::retry_nomem;
      }
      // relaxed: only this device sets it; the queue's publish orders the
      // fragment's bytes and this word before the receiver's reads.
      context_.fragment_busy(local_rank_me_, slot_, index).store(1, util::mo_relaxed);
      std::memcpy(context_.fragment(local_rank_me_, slot_, index), buffer, size);
      const fragment_ref_t ref{index, static_cast<std::uint32_t>(size)};
      std::memcpy(reservation.payload, &ref, sizeof(ref));
      queue.publish(reservation, make_kind(wire_kind_t::fragment, generation_), imm_data,
                    sizeof(ref));
    }
    // The payload is in the segment: the caller's buffer is free again.
    if (completes) complete(local_status(net_opcode_t::send, rank, size, user_context));
    return accepted;
  });
}

error_t shm_device_t::rma(const rma_t& post) {
  const std::size_t size_max = post.completes ? attr_.max_msg_size : attr_.inject_size_max;
  const int local_rank = check_target(post.op, post.rank, post.buffer, post.size, size_max);
  if (!context_.cma_available()) {
    throw std::logic_error(std::string(post.op) +
                           ": cross-memory attach is refused on this node, and the shm "
                           "device moves put and get data only through it");
  }
  return util::try_locked(lock_, [&]() -> error_t {
    if (!ring_has_room(1)) return errorcode_t::retry_nomem;
    const error_t accepted = post.completes ? errorcode_t::posted : errorcode_t::done;
    if (local_rank < 0) {
      fail_dead(post.rank, post.completes ? post.user_context : nullptr, post.opcode);
      return accepted;
    }
    queue_t& queue = context_.queue(local_rank, slot_);
    reservation_t reservation;
    // The signal's slot first: a full queue then changes nothing.
    if (post.signals && queue.reserve(static_cast<std::uint32_t>(local_rank_me_), reservation) !=
                            queue_status_t::ok) {
      return errorcode_t::retry_nomem;
    }
    const std::uintptr_t remote = post.rmr.base + post.offset;
    const int error_number =
        post.size == 0 ? 0
                       : cma_transfer(context_.locality().peers[post.rank].pid, post.buffer,
                                      remote, post.size, post.opcode == net_opcode_t::write);
    if (post.signals) {
      const signal_t signal{post.size};
      std::memcpy(reservation.payload, &signal, sizeof(signal));
      const wire_kind_t kind = error_number == 0 ? wire_kind_t::signal : wire_kind_t::nop;
      queue.publish(reservation, make_kind(kind, generation_), post.imm_data, sizeof(signal));
    }
    if (error_number != 0 || post.completes) {
      net_status_t status = local_status(post.opcode, post.rank, post.size,
                                         post.completes ? post.user_context : nullptr);
      if (error_number == ESRCH) {
        status.fault = net_fault_t::peer_crashed;
      } else if (error_number != 0) {
        status.fault = net_fault_t::protection;
        status.fault_address = remote;
      }
      complete(status);
    }
    return accepted;
  });
}

void shm_device_t::report_deaths() {
  context_.refresh_dead_peers();
  for (std::size_t local_rank = 0; local_rank < reported_dead_.size(); ++local_rank) {
    if (reported_dead_[local_rank] || !context_.is_dead(static_cast<int>(local_rank))) continue;
    reported_dead_[local_rank] = true;
    ring_.push_back(peer_down_status(context_.locality().local_ranks[local_rank]));
  }
}

bool shm_device_t::next_message(wire_message_t& message) {
  if (!early_.empty()) {
    message = early_.front();
    early_.pop_front();
    return true;
  }
  message.status = context_.queue(local_rank_me_, slot_).pop(
      message.header, message.payload,
      [this](std::uint32_t producer) { return context_.is_dead(static_cast<int>(producer)); });
  if (message.status == queue_status_t::corrupt) {
    throw std::runtime_error("shm device: the receive queue of slot " + std::to_string(slot_) +
                             " breaks the queue's protocol (a faulty local process wrote it)");
  }
  return message.status == queue_status_t::ok;
}

// The fragment a message names, checked (the sender may be faulty).
fragment_ref_t fragment_of(const wire_message_t& message) {
  fragment_ref_t ref{};
  std::memcpy(&ref, message.payload, sizeof(ref));
  if (message.header.length_bytes != sizeof(ref) || ref.index >= fragments_per_pool ||
      ref.length_bytes > fragment_bytes) {
    throw std::runtime_error("shm device: a malformed fragment message from local rank " +
                             std::to_string(message.header.source));
  }
  return ref;
}

void shm_device_t::free_fragment(const wire_message_t& message, const fragment_ref_t& ref) {
  // release: pairs with the sender's acquire in find_fragment(), so its
  // next writes come after our reads.
  context_.fragment_busy(static_cast<int>(message.header.source), slot_, ref.index)
      .store(0, util::mo_release);
}

bool shm_device_t::route_other_generation(const wire_message_t& message) {
  const std::uint32_t generation = message.header.kind >> kind_bits;
  if (generation == generation_) return false;
  // From a later device of this slot's sender: keep it for our successor
  // (its fragment stays busy until then). From an earlier one: drop it.
  if (((generation - generation_) & generation_mask) < (generation_mask >> 1)) {
    context_.hold(slot_, message);
  } else if (kind_of(message) == wire_kind_t::fragment) {
    free_fragment(message, fragment_of(message));
  }
  return true;
}

bool shm_device_t::deliver(const wire_message_t& message, net_status_t& status) {
  const message_t& header = message.header;
  const int local_source = static_cast<int>(header.source);
  const wire_kind_t kind = kind_of(message);
  status = net_status_t();
  status.rank = context_.locality().local_ranks[local_source];
  status.imm_data = static_cast<net_imm_data_t>(header.imm);
  switch (kind) {
    case wire_kind_t::inline_send:
    case wire_kind_t::fragment: {
      const posted_recv_t recv = recvs_.front();
      recvs_.pop_front();
      const bool fragment = kind == wire_kind_t::fragment;
      const fragment_ref_t ref = fragment ? fragment_of(message) : fragment_ref_t{};
      const std::size_t length = fragment ? ref.length_bytes : header.length_bytes;
      if (length > recv.size) {
        if (fragment) free_fragment(message, ref);
        throw std::logic_error("shm device: a message of " + std::to_string(length) +
                               " bytes for a receive buffer of " + std::to_string(recv.size));
      }
      const void* source =
          fragment ? context_.fragment(local_source, slot_, ref.index) : message.payload;
      std::memcpy(recv.buffer, source, length);
      if (fragment) free_fragment(message, ref);
      status.opcode = net_opcode_t::recv;
      status.buffer = recv.buffer;
      status.user_context = recv.user_context;
      status.length = length;
      return true;
    }
    case wire_kind_t::signal: {
      signal_t signal{};
      std::memcpy(&signal, message.payload, sizeof(signal));
      status.opcode = net_opcode_t::remote_write;
      status.length = static_cast<std::size_t>(signal.length_bytes);
      return true;
    }
    case wire_kind_t::nop:
      return false;
  }
  throw std::runtime_error("shm device: a message of unknown kind " +
                           std::to_string(header.kind & kind_mask) + " from local rank " +
                           std::to_string(local_source));
}

std::size_t shm_device_t::poll_comp(net_status_t* statuses, std::size_t statuses_max) {
  util::try_lock_guard_t guard(lock_);
  if (!guard.owns_lock()) return 0;
  report_deaths();
  std::size_t count = 0;
  while (count < statuses_max && !ring_.empty()) {
    statuses[count++] = ring_.front();
    ring_.pop_front();
  }
  // A message that needs a buffer when none is posted waits (at the front
  // of early_), and so do those behind it in the queue, whose senders then
  // find it full (back-pressure).
  wire_message_t message;
  while (count < statuses_max && next_message(message)) {
    if (route_other_generation(message)) continue;
    const wire_kind_t kind = kind_of(message);
    if (recvs_.empty() && (kind == wire_kind_t::inline_send || kind == wire_kind_t::fragment)) {
      early_.push_front(message);
      break;
    }
    if (deliver(message, statuses[count])) ++count;
  }
  return count;
}

error_t shm_device_t::register_memory(void* address, std::size_t size, net_mr_t* mr) {
  // Nothing to pin: CMA reads and writes any mapped memory of the peer.
  mr->base = address;
  mr->size = size;
  mr->opaque = this;
  return errorcode_t::done;
}

net_rmr_t shm_device_t::get_rmr(net_mr_t mr) const {
  if (mr.is_empty()) throw std::invalid_argument("get_rmr: an empty mr");
  net_rmr_t rmr;
  rmr.base = reinterpret_cast<std::uintptr_t>(mr.base);
  rmr.size = mr.size;
  return rmr;
}

}  // namespace

shm_context_t::shm_context_t(bootstrap::bootstrap_t& bootstrap,
                             const bootstrap::locality_t& locality)
    : locality_(locality),
      local_rank_of_(locality.peers.size(), -1),
      local_rank_n_(static_cast<int>(locality.local_ranks.size())),
      segment_(open_segment(bootstrap, locality, payload_bytes())),
      cma_(probe_cma(segment_, bootstrap, locality)),
      queues_(static_cast<std::size_t>(local_rank_n_) * devices_per_rank_max),
      dead_(new util::atomic<int>[local_rank_n_]) {
  for (int local_rank = 0; local_rank < local_rank_n_; ++local_rank) {
    local_rank_of_[locality.local_ranks[local_rank]] = local_rank;
    dead_[local_rank].store(0, util::mo_relaxed);  // relaxed: not shared yet
  }
  // Each rank lays out its own queues; after the barrier every rank
  // attaches all of them.
  for (int slot = 0; slot < devices_per_rank_max; ++slot) {
    const queue_status_t status =
        queue(locality_.local_rank_me, slot)
            .init(segment_.payload() +
                      (locality_.local_rank_me * devices_per_rank_max + slot) * queue_stride_bytes(),
                  queue_stride_bytes(), queue_params(local_rank_n_));
    if (status != queue_status_t::ok) throw std::logic_error("shm: bad queue parameters");
  }
  bootstrap.barrier();
  for (int local_rank = 0; local_rank < local_rank_n_; ++local_rank) {
    for (int slot = 0; slot < devices_per_rank_max; ++slot) {
      if (queue(local_rank, slot)
              .attach(segment_.payload() +
                          (local_rank * devices_per_rank_max + slot) * queue_stride_bytes(),
                      queue_stride_bytes()) != queue_status_t::ok) {
        throw std::runtime_error("shm: the queue of local rank " + std::to_string(local_rank) +
                                 " in " + segment_.name() + " is malformed");
      }
    }
  }
}

shm_context_t::~shm_context_t() = default;

std::size_t shm_context_t::queue_stride_bytes() const {
  return round_up(queue_t::region_bytes(queue_params(local_rank_n_)), segment_page_size_bytes);
}

std::size_t shm_context_t::pool_stride_bytes() const {
  // The busy words on a page of their own, then the fragments.
  return segment_page_size_bytes + fragments_per_pool * fragment_bytes;
}

std::size_t shm_context_t::payload_bytes() const {
  return static_cast<std::size_t>(local_rank_n_) * devices_per_rank_max *
         (queue_stride_bytes() + pool_stride_bytes());
}

util::atomic<std::uint32_t>& shm_context_t::fragment_busy(int local_rank, int slot,
                                                          std::uint32_t index) {
  unsigned char* pool = reinterpret_cast<unsigned char*>(segment_.payload()) +
                        local_rank_n_ * devices_per_rank_max * queue_stride_bytes() +
                        (local_rank * devices_per_rank_max + slot) * pool_stride_bytes();
  // Each word on its own cache line: the sender and the receiver write them.
  return *reinterpret_cast<util::atomic<std::uint32_t>*>(pool + index * util::cache_line_bytes);
}

unsigned char* shm_context_t::fragment(int local_rank, int slot, std::uint32_t index) {
  return reinterpret_cast<unsigned char*>(&fragment_busy(local_rank, slot, 0)) +
         segment_page_size_bytes + index * fragment_bytes;
}

void shm_context_t::refresh_dead_peers() {
  const std::uint64_t now = now_ns();
  std::uint64_t next = next_peer_check_ns_.load(util::mo_relaxed);
  // relaxed: only a rate limit; one device of the process checks per period.
  if (now < next ||
      !next_peer_check_ns_.compare_exchange_strong(next, now + peer_check_interval_ns,
                                                   util::mo_relaxed, util::mo_relaxed)) {
    return;
  }
  for (int local_rank = 0; local_rank < local_rank_n_; ++local_rank) {
    const pid_t pid = locality_.peers[locality_.local_ranks[local_rank]].pid;
    if (::kill(pid, 0) != 0 && errno == ESRCH) {
      // relaxed: the flag carries no data; the queue's reclaim needs only
      // that the process writes no more, which its death ensures.
      dead_[local_rank].store(1, util::mo_relaxed);
    }
  }
}

void shm_context_t::hold(int slot, const wire_message_t& message) {
  std::lock_guard<std::mutex> guard(slots_mutex_);
  held_[slot].push_back(message);
}

std::deque<wire_message_t> shm_context_t::take_held(int slot, std::uint32_t generation) {
  std::deque<wire_message_t> mine;
  std::deque<wire_message_t> later;
  for (const wire_message_t& message : held_[slot]) {
    ((message.header.kind >> kind_bits) == (generation & generation_mask) ? mine : later)
        .push_back(message);
  }
  held_[slot] = std::move(later);
  return mine;
}

void shm_context_t::release_slot(int slot) {
  std::lock_guard<std::mutex> guard(slots_mutex_);
  slot_used_[slot] = false;
}

std::unique_ptr<net_device_t> shm_context_t::alloc_device(const net_device_attr_t& requested) {
  std::lock_guard<std::mutex> guard(slots_mutex_);
  const std::uint32_t generation = generations_n_;
  const int slot = static_cast<int>(generation % devices_per_rank_max);
  if (slot_used_[slot]) {
    throw std::runtime_error("alloc_device: the shm device " + std::to_string(generation) +
                             " needs slot " + std::to_string(slot) + ", still held by device " +
                             std::to_string(generation - devices_per_rank_max) +
                             " or earlier: at most " + std::to_string(devices_per_rank_max) +
                             " devices per rank, each freed before the one " +
                             std::to_string(devices_per_rank_max) + " allocations later");
  }
  auto device = std::make_unique<shm_device_t>(*this, requested, slot, generation,
                                               take_held(slot, generation));
  slot_used_[slot] = true;
  ++generations_n_;
  return device;
}

net_device_attr_t shm_context_t::device_defaults() const {
  net_device_attr_t defaults;
  defaults.net_max_sends = queue_slots_count;
  defaults.net_max_recvs = 256;
  defaults.net_max_cqes = 4096;
  return defaults;
}

}  // namespace lci::backend::shm
