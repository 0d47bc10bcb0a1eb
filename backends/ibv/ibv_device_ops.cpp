// ibv_device_t: the operation records — op lists, the lock-free inboxes
// that hand ops between threads, and the send and receive op pools.
#include "backends/ibv/ibv_device.hpp"

#include "lci/util/assert.hpp"

namespace lci::backend::ibv {

void ibv_device_t::op_list_t::push(op_t* op) {
  op->next = nullptr;
  if (tail == nullptr) {
    head = op;
  } else {
    tail->next = op;
  }
  tail = op;
}

void ibv_device_t::op_list_t::push_front(op_t* op) {
  op->next = head;
  head = op;
  if (tail == nullptr) tail = op;
}

void ibv_device_t::op_list_t::push_front(op_list_t* ops) {
  if (ops->empty()) return;
  ops->tail->next = head;
  if (tail == nullptr) tail = ops->tail;
  head = ops->head;
  *ops = op_list_t{};
}

void ibv_device_t::op_inbox_t::push(op_t* op) {
  // relaxed: only a starting guess; the CAS below re-reads it.
  op_t* first = head.load(util::mo_relaxed);
  do {  // lock-free: each failed CAS means another push succeeded
    op->next = first;
    // release: pairs with the acquire in take_all() [I]: the op's fields
    // are visible to the taker. relaxed on failure: retried.
  } while (!head.compare_exchange_weak(first, op, util::mo_release, util::mo_relaxed));
}

ibv_device_t::op_list_t ibv_device_t::op_inbox_t::take_all() {
  // acquire: pairs with the release in push() [I].
  op_t* newest = head.exchange(nullptr, util::mo_acquire);
  op_list_t ops;
  while (newest != nullptr) {  // bounded: the inbox holds at most ops_.size() ops
    op_t* next = newest->next;
    ops.push_front(newest);
    newest = next;
  }
  return ops;
}

ibv_device_t::op_t* ibv_device_t::op_list_t::pop() {
  op_t* op = head;
  if (op == nullptr) return nullptr;
  head = op->next;
  if (head == nullptr) tail = nullptr;
  op->next = nullptr;
  return op;
}

// The caller holds the pool's lock: send_pool_lock_ or srq_lock_. An empty
// list takes in what was released since.
ibv_device_t::op_t* ibv_device_t::alloc_op(bool is_recv) {
  op_t*& list = is_recv ? free_recvs_ : free_sends_;
  if (list == nullptr) {
    list = (is_recv ? freed_recvs_ : freed_sends_).take_all().head;  // linked by next
  }
  op_t* op = list;
  if (op == nullptr) return nullptr;
  list = op->next;
  LCI_ASSERT(op->state == op_state_t::free, "a free-list op is not free");
  const bool recv = op->is_recv;
  *op = op_t{};
  op->is_recv = recv;
  return op;
}

void ibv_device_t::release_op(op_t* op) {
  LCI_ASSERT(op->state != op_state_t::free, "an op released twice");
  if (op->own_mr != nullptr) {
    const int error = dereg_range(op->own_mr);
    LCI_ASSERT(error == 0, "dereg_mr of an op's own registration failed");
    op->own_mr = nullptr;
  }
  op->state = op_state_t::free;
  (op->is_recv ? freed_recvs_ : freed_sends_).push(op);  // any thread: no pool lock needed
}

}  // namespace lci::backend::ibv
