#include "backends/ofi/ofi_op_table.hpp"

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "lci/util/assert.hpp"

namespace lci::backend::ofi {

namespace {
std::size_t index_of(op_pool_t pool) { return static_cast<std::size_t>(pool); }

// What alloc() resets an op to. fi_context is left out: it is the
// provider's scratch space while the op is posted, which needs no clearing,
// and copying the rest of a constant blank op is a few vector moves where
// `*op = op_t{}` built a whole op and copied it (48 instructions, the
// costliest line of an 8-byte active message's path over shm;
// docs/bench_upstream.md).
constexpr op_t blank_op{};
constexpr std::size_t reset_from = offsetof(op_t, next);
static_assert(std::is_trivially_copyable_v<op_t> && std::is_standard_layout_v<op_t>,
              "alloc() resets an op with memcpy from its first field after fi_context");
static_assert(reset_from == sizeof(fi_context2), "fi_context is op_t's first field, alone");
}  // namespace

op_table_t::op_table_t(std::size_t sends_max, std::size_t recvs_max, std::size_t notices_max)
    : sizes_{sends_max, recvs_max, notices_max},
      total_(sends_max + recvs_max + notices_max),
      ops_(new op_t[sends_max + recvs_max + notices_max]) {
  LCI_ASSERT(sends_max > 0, "a device needs send contexts");
  LCI_ASSERT(recvs_max > 0, "a device needs receive contexts");
  // Push in reverse so that alloc() hands out low indices first (easier to
  // follow in a debugger; no other effect).
  std::size_t end = total_;
  for (std::size_t pool = op_pools_count; pool-- > 0;) {
    const std::size_t begin = end - sizes_[pool];
    for (std::size_t i = end; i-- > begin;) {
      ops_[i].next = free_[pool];
      free_[pool] = &ops_[i];
    }
    end = begin;
  }
  LCI_ASSERT(end == 0, "pools do not tile the table");
}

std::size_t op_table_t::pool_index_of(const op_t* op) const {
  const auto index = static_cast<std::size_t>(op - ops_.get());
  LCI_ASSERT(index < total_, "op outside the table");
  std::size_t begin = 0;
  // Equivalent mutants: bound. The pools tile [0, total_) and index < total_,
  // so the loop returns before pool reaches op_pools_count: a `<=` bound is
  // never tested at its last value.
  for (std::size_t pool = 0; pool < op_pools_count; ++pool) {
    if (index < begin + sizes_[pool]) return pool;
    begin += sizes_[pool];
  }
  return op_pools_count;  // unreachable: index < total_
}

std::size_t op_table_t::send_index_of(const op_t* op) const {
  LCI_ASSERT(pool_index_of(op) == index_of(op_pool_t::send), "not an op of the send pool");
  const auto index = static_cast<std::size_t>(op - ops_.get());
  LCI_ASSERT(index < sizes_[index_of(op_pool_t::send)], "a send index past its pool");
  return index;  // the send pool comes first in ops_
}

op_t* op_table_t::alloc(op_pool_t pool) {
  const std::size_t p = index_of(pool);
  op_t* op = free_[p];
  if (op == nullptr) return nullptr;
  LCI_ASSERT(op->state == op_state_t::free, "a free-list op is not free");
  free_[p] = op->next;
  ++in_use_[p];
  std::memcpy(reinterpret_cast<std::byte*>(op) + reset_from,
              reinterpret_cast<const std::byte*>(&blank_op) + reset_from, sizeof(op_t) - reset_from);
  op->state = op_state_t::taken;
  return op;
}

void op_table_t::release(op_t* op) {
  LCI_ASSERT(op->state != op_state_t::free, "op released twice");
  const std::size_t p = pool_index_of(op);
  LCI_ASSERT(in_use_[p] > 0, "release with no op in use");
  op->state = op_state_t::free;
  op->next = free_[p];
  free_[p] = op;
  --in_use_[p];
}

op_t* op_table_t::from_context(void* context) {
  auto* op = static_cast<op_t*>(context);  // fi_context is the first member
  LCI_ASSERT(op >= ops_.get() && op < ops_.get() + total_,
             "a completion with a context that is not one of this device's ops");
  LCI_ASSERT(op->state == op_state_t::posted || op->state == op_state_t::abandoned,
             "a completion for an op that is not in flight");
  return op;
}

void op_table_t::fifo_t::push(op_t* op) {
  op->next = nullptr;
  if (tail == nullptr) {
    head = op;
  } else {
    tail->next = op;
  }
  tail = op;
  ++count;
}

op_t* op_table_t::fifo_t::pop() {
  op_t* op = head;
  if (op == nullptr) return nullptr;
  head = op->next;
  if (head == nullptr) tail = nullptr;
  op->next = nullptr;
  --count;
  return op;
}

void op_table_t::push_settled(op_t* op) {
  LCI_ASSERT(op->fault != backend::net_fault_t::none ||
                 (op->opcode == backend::net_opcode_t::write && op->length == 0),
             "a settled op without a fault that is not a zero-byte put");
  settled_.push(op);
}

void op_table_t::push_deferred(op_t* op) {
  LCI_ASSERT(op->state == op_state_t::taken, "a deferred op is in libfabric's hands");
  deferred_.push(op);
}

std::size_t op_table_t::fail_posted_to(int rank, backend::net_fault_t fault) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < sizes_[0]; ++i) {
    op_t* op = &ops_[i];
    if (op->state != op_state_t::posted || op->rank != rank) continue;
    op->state = op_state_t::abandoned;
    op->fault = fault;
    push_settled(op);
    ++count;
  }
  return count;
}

std::size_t op_table_t::capacity(op_pool_t pool) const { return sizes_[index_of(pool)]; }

}  // namespace lci::backend::ofi
