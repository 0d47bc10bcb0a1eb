// op_table_t: the preallocated contexts of a device's operations in flight.
// Every post takes one op_t and hands &op->fi_context to libfabric as the
// operation's context; the completion brings it back, and with it what the
// completion must report (opcode, peer rank, length, user context, the
// receive buffer, the remote address for a fault). Nothing is allocated on
// the data path.
//
// Three pools: send-side operations (sends, puts, gets; net_max_sends),
// the caller's posted receives, one op per buffer whether it takes one
// message or many (net_max_recvs), and the device's own receives for
// notices (docs/backends/ofi.md). An empty pool is the device's retry_nomem.
//
// Life of an op:  free -alloc-> taken -post ok-> posted -completion-> free
//                 posted (multi-receive buffer) -completion of a message->
//                        posted still; -completion that releases it-> free
//                 taken -post refused (EAGAIN)-> free
//                 taken -peer known dead-> settled with a fault (never
//                        posted; reported once by poll, then free)
//                 taken -zero-byte put, no immediate data-> settled with
//                        no fault (never posted; reported likewise)
//                 posted -write of an emulated put-with-immediate done->
//                        taken again, as its notice -> posted (or deferred)
//                 posted -notice received (notice pool)-> taken -> posted
//                        again (or deferred)
//                 posted -lost its connection, peer alive (an RMA, a
//                        send, a notice; a receive whose message was cut
//                        off)-> taken -> posted again (or deferred)
//                 posted -peer found dead-> abandoned + settled (reported
//                        once by poll; freed once it is both reported and
//                        returned by libfabric, which a dead peer's
//                        provider may never do: then the op stays taken)
//
// Thread safety: none; the owning device calls it under its endpoint lock.
// Blocking:      never.
// Ownership:     the table owns the ops; libfabric holds a posted op's
//                fi_context until its completion is read.
// Allocation:    at construction only.
// Limits:        the three pool sizes; alloc() returns nullptr when a pool
//                is empty; the settled and deferred lists hold at most every
//                op.
#pragma once

#include <rdma/fabric.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "backends/backend.hpp"

namespace lci::backend::ofi {

enum class op_pool_t : std::uint8_t { send, recv, notice };
inline constexpr std::size_t op_pools_count = 3;
enum class op_state_t : std::uint8_t { free, taken, posted, settled, abandoned };

struct op_t {
  // First member: libfabric is given &fi_context, and providers in
  // FI_CONTEXT/FI_CONTEXT2 mode use it as scratch space while the operation
  // is in flight.
  fi_context2 fi_context;
  op_t* next = nullptr;  // free list, settled list or deferred list
  void* user_context = nullptr;
  // The local buffer (recv: the posted one; an inject: the device's copy of
  // its payload, where it keeps one: ofi_device_impl_t::keep_payload_locked).
  void* buffer = nullptr;
  std::uintptr_t remote_address = 0;    // RMA: rmr.base + offset (for faults)
  std::size_t length = 0;               // bytes to transfer / buffer size
  // Kept to post it again after a lost connection: the local descriptor,
  // (RMA) libfabric's remote address and key, the CQ data (a send's
  // immediate), the op flags.
  void* desc = nullptr;
  std::uint64_t rma_address = 0;
  std::uint64_t rkey = 0;
  std::uint64_t cq_data = 0;
  std::uint64_t flags = 0;
  int rank = -1;                        // the peer (recv: filled at completion)
  // send, write, read; recv for the caller's receives; remote_write for the
  // device's own notice receives.
  backend::net_opcode_t opcode = backend::net_opcode_t::send;
  backend::net_fault_t fault = backend::net_fault_t::none;  // settled by a failure: why
  // Emulated put-with-immediate (docs/backends/ofi.md): the notice's CQ data, sent
  // once the write has landed; is_notice once the op carries that notice.
  std::uint64_t notice_data = 0;
  bool is_notice = false;
  std::uint8_t reposts = 0;  // times posted again after a lost connection
  std::uint64_t repost_at_ns = 0;  // not posted again before (steady clock)
  bool inject = false;    // net_post_sends/puts: success is not reported
  // recv: a post_recv_multi buffer (buffer, length: all of it), posted until
  // libfabric releases it; the messages it has taken so far (the release
  // reports them as buffer_messages).
  bool multi_recv = false;
  std::size_t multi_recv_messages = 0;
  bool reported = false;  // abandoned: poll has reported its fault
  bool returned = false;  // abandoned: libfabric has given it back
  op_state_t state = op_state_t::free;
};

class op_table_t {
 public:
  op_table_t(std::size_t sends_max, std::size_t recvs_max, std::size_t notices_max);
  op_table_t(const op_table_t&) = delete;
  op_table_t& operator=(const op_table_t&) = delete;

  // An op in state taken, every field but fi_context (the provider's
  // scratch) at its default; nullptr when the pool is empty.
  op_t* alloc(op_pool_t pool);
  // Back to its pool; the op must not be in libfabric's hands.
  void release(op_t* op);
  // The index of an op of the send pool, in [0, capacity(send)): fixed for
  // the op's life, so the device may keep per-op storage beside the table.
  std::size_t send_index_of(const op_t* op) const;
  // The op whose fi_context libfabric returned; asserts it is one of ours
  // and in flight.
  op_t* from_context(void* context);

  // Settled ops — finished without a provider completion: failed (a fault),
  // or a zero-byte put that needs no provider op — wait here until poll
  // reports them (FIFO).
  void push_settled(op_t* op);
  op_t* pop_settled() { return settled_.pop(); }
  bool has_settled() const { return !settled_.empty(); }
  // Ops to post again from poll (a notice to send, a notice receive, an RMA
  // that lost its connection), and those libfabric refused there with
  // -FI_EAGAIN, wait here for the next poll (FIFO).
  void push_deferred(op_t* op);
  op_t* pop_deferred() { return deferred_.pop(); }
  std::size_t deferred_count() const { return deferred_.count; }

  // Marks every posted send-side op to `rank` failed with `fault` (state
  // abandoned: libfabric still holds it); returns how many.
  std::size_t fail_posted_to(int rank, backend::net_fault_t fault);
  // Calls fn(rank) for every posted send-side op (ranks may repeat).
  template <typename Fn>
  void for_each_posted_rank(Fn&& fn) const {
    for (std::size_t i = 0; i < sizes_[0]; ++i) {
      if (ops_[i].state == op_state_t::posted) fn(ops_[i].rank);
    }
  }

  std::size_t capacity(op_pool_t pool) const;

 private:
  // An intrusive FIFO through op_t::next.
  struct fifo_t {
    op_t* head = nullptr;
    op_t* tail = nullptr;
    std::size_t count = 0;
    bool empty() const { return head == nullptr; }
    void push(op_t* op);
    op_t* pop();
  };

  std::size_t pool_index_of(const op_t* op) const;

  const std::size_t sizes_[op_pools_count];
  const std::size_t total_;
  std::unique_ptr<op_t[]> ops_;  // the send pool, then the recv pool, then the notice pool
  op_t* free_[op_pools_count] = {nullptr, nullptr, nullptr};
  std::size_t in_use_[op_pools_count] = {0, 0, 0};
  fifo_t settled_;
  fifo_t deferred_;
};

}  // namespace lci::backend::ofi
