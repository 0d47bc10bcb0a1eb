#include "tests/soak/soak_checker.hpp"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace lci::soak {

// ---- error_log_t ----

void error_log_t::fail(const std::string& what) {
  std::lock_guard<std::mutex> guard(lock_);
  if (kept_.size() < kept_max) kept_.push_back(what);
  count_.fetch_add(1, std::memory_order_release);  // release: pairs with failed()'s acquire
}

std::string error_log_t::report() const {
  std::lock_guard<std::mutex> guard(lock_);
  std::string text;
  for (const std::string& line : kept_) text += "  " + line + "\n";
  const std::size_t count = count_.load(std::memory_order_acquire);
  if (count > kept_.size()) {
    text += "  (" + std::to_string(count - kept_.size()) + " more)\n";
  }
  return text;
}

// ---- pair_counts_t ----

bool pair_counts_t::operator==(const pair_counts_t& other) const {
  for (int k = 0; k < op_kinds_count; ++k) {
    if (ops[k] != other.ops[k]) return false;
  }
  return bytes == other.bytes;
}

std::string pair_counts_t::describe() const {
  std::string text;
  for (int k = 0; k < op_kinds_count; ++k) {
    text += std::string(get_op_kind_str(static_cast<op_kind_t>(k))) + "=" +
            std::to_string(ops[k]) + " ";
  }
  return text + "bytes=" + std::to_string(bytes);
}

bool seen_by_target(const op_plan_t& op) {
  switch (op.kind) {
    case op_kind_t::am:
    case op_kind_t::send:
      return true;
    case op_kind_t::put_signal:
    case op_kind_t::get_signal:
      return op.remote != remote_kind_t::counter;
    case op_kind_t::put:
    case op_kind_t::get:
      return false;
  }
  return false;
}

// ---- inbound_ledger_t ----

void inbound_ledger_t::reset(const epoch_plan_t* plan, const std::uint8_t* put_area) {
  plan_ = plan;
  put_area_ = put_area;
  sources_ = std::vector<source_t>(static_cast<std::size_t>(plan->ranks_count));
  events_expected_ = 0;
  counter_expected_ = 0;
  events_arrived_.store(0, std::memory_order_relaxed);  // relaxed: before the epoch's threads
  for (int source = 0; source < plan->ranks_count; ++source) {
    const auto& inbound = plan->inbound_by_pair[static_cast<std::size_t>(source)];
    source_t& s = sources_[static_cast<std::size_t>(source)];
    s.arrivals.reset(new std::atomic<std::uint32_t>[inbound.size()]);
    for (std::size_t i = 0; i < inbound.size(); ++i) s.arrivals[i].store(0);
    s.counts.reset(new std::atomic<std::uint64_t>[op_kinds_count]);
    for (int k = 0; k < op_kinds_count; ++k) s.counts[k].store(0);
    for (const op_plan_t* op : inbound) {
      if (seen_by_target(*op)) ++events_expected_;
      if (op->remote == remote_kind_t::counter) ++counter_expected_;
    }
  }
}

const op_plan_t* inbound_ledger_t::lookup_pair(const status_t& status, const char* what,
                                               error_log_t& errors) const {
  if (status.rank < 0 || status.rank >= plan_->ranks_count) {
    errors.fail(std::string(what) + " from rank " + std::to_string(status.rank) +
                ": no such rank");
    return nullptr;
  }
  const auto& inbound = plan_->inbound_by_pair[static_cast<std::size_t>(status.rank)];
  const std::uint64_t pair = status.tag & pair_index_mask;
  if (pair >= inbound.size()) {
    errors.fail(std::string(what) + " from rank " + std::to_string(status.rank) + " with tag " +
                std::to_string(status.tag) + ": the plan has no such message (" +
                std::to_string(inbound.size()) + " from that rank)");
    return nullptr;
  }
  return inbound[pair];
}

bool inbound_ledger_t::arrive(const op_plan_t& op, const char* how, error_log_t& errors) {
  source_t& s = sources_[static_cast<std::size_t>(op.source)];
  // relaxed: the count itself is the fact; the data was checked by the caller.
  const std::uint32_t before = s.arrivals[op.pair_index].fetch_add(1, std::memory_order_relaxed);
  if (before != 0) {
    errors.fail(op.describe() + ": arrived again (" + how + ", arrival " +
                std::to_string(before + 1) + ")");
    return false;
  }
  s.counts[static_cast<int>(op.kind)].fetch_add(1, std::memory_order_relaxed);  // relaxed: a count
  s.bytes.fetch_add(op.size, std::memory_order_relaxed);                       // relaxed: a count
  // release: pairs with the acquire in complete(): the arrival's checks
  // (and a receive's bytes) happen before the rank sees the epoch complete.
  events_arrived_.fetch_add(1, std::memory_order_release);
  return true;
}

void inbound_ledger_t::on_am(const status_t& status, remote_kind_t via, error_log_t& errors) {
  struct free_t {
    void* buffer;
    ~free_t() { std::free(buffer); }  // the runtime allocated it with malloc
  } owned{status.buffer};
  if (!status.is_done()) {
    errors.fail("an active message from rank " + std::to_string(status.rank) + " (" +
                get_remote_kind_str(via) + ") completed with " + status.error.get_str());
    return;
  }
  const op_plan_t* op = lookup_pair(status, "an active message", errors);
  if (op == nullptr) return;
  const std::string what = op->describe() + " at its target";
  if (op->kind != op_kind_t::am) {
    errors.fail(what + ": arrived as an active message");
    return;
  }
  if (status.tag != op->tag) errors.fail(what + ": status.tag " + std::to_string(status.tag));
  if (via != op->remote) {
    errors.fail(what + ": arrived at the " + get_remote_kind_str(via) + " remote completion");
  }
  if (status.size != op->size) {
    errors.fail(what + ": status.size " + std::to_string(status.size));
    return;
  }
  if (op->size > 0 && status.buffer == nullptr) {
    errors.fail(what + ": no buffer");
    return;
  }
  const std::size_t wrong = check_payload(status.buffer, status.size, key_of(*plan_, *op));
  if (wrong != status.size) {
    errors.fail(what + ": byte " + std::to_string(wrong) + " of " + std::to_string(op->size) +
                " is wrong");
    return;
  }
  arrive(*op, "active message", errors);
}

void inbound_ledger_t::on_signal(const status_t& status, remote_kind_t via, error_log_t& errors) {
  if (!status.is_done()) {
    errors.fail("a signal from rank " + std::to_string(status.rank) + " (" +
                get_remote_kind_str(via) + ") completed with " + status.error.get_str());
    return;
  }
  if (status.rank < 0 || status.rank >= plan_->ranks_count) {
    errors.fail("a signal from rank " + std::to_string(status.rank) + ": no such rank");
    return;
  }
  const auto& signals = plan_->inbound_by_signal[static_cast<std::size_t>(status.rank)];
  if (status.tag >= signals.size()) {
    errors.fail("a signal from rank " + std::to_string(status.rank) + " with tag " +
                std::to_string(status.tag) + ": the plan has no such signal (" +
                std::to_string(signals.size()) + " from that rank)");
    return;
  }
  const op_plan_t& op = *signals[static_cast<std::size_t>(status.tag)];
  const std::string what = op.describe() + " at its target";
  if (via != op.remote) {
    errors.fail(what + ": signalled the " + get_remote_kind_str(via) + " remote completion");
  }
  if (op.kind == op_kind_t::put_signal) {
    if (status.size != op.size) errors.fail(what + ": status.size " + std::to_string(status.size));
    const std::size_t wrong =
        check_payload(put_area_ + op.remote_offset, op.size, key_of(*plan_, op));
    if (wrong != op.size) {
      errors.fail(what + ": signalled, but byte " + std::to_string(wrong) + " of " +
                  std::to_string(op.size) + " in its region is wrong");
    }
  } else if (status.size != 0 && status.size != op.size) {
    errors.fail(what + ": status.size " + std::to_string(status.size));
  }
  arrive(op, "signal", errors);
}

void inbound_ledger_t::on_recv(const op_plan_t& op, error_log_t& errors) {
  arrive(op, "receive", errors);
}

bool inbound_ledger_t::complete(std::int64_t counter_value) const {
  // acquire: pairs with the release in arrive().
  return events_arrived_.load(std::memory_order_acquire) == events_expected_ &&
         counter_value >= counter_expected_;
}

void inbound_ledger_t::check_final(std::int64_t counter_value, error_log_t& errors) const {
  for (int source = 0; source < plan_->ranks_count; ++source) {
    const auto& inbound = plan_->inbound_by_pair[static_cast<std::size_t>(source)];
    const source_t& s = sources_[static_cast<std::size_t>(source)];
    for (std::size_t i = 0; i < inbound.size(); ++i) {
      const std::uint32_t arrivals = s.arrivals[i].load(std::memory_order_relaxed);
      const std::uint32_t expected = seen_by_target(*inbound[i]) ? 1 : 0;
      if (arrivals != expected) {
        errors.fail(inbound[i]->describe() + ": arrived " + std::to_string(arrivals) +
                    " times at its target");
      }
    }
  }
  if (counter_value != counter_expected_) {
    errors.fail("the remote counter holds " + std::to_string(counter_value) + ", the plan says " +
                std::to_string(counter_expected_));
  }
}

pair_counts_t inbound_ledger_t::received_from(int source) const {
  const source_t& s = sources_[static_cast<std::size_t>(source)];
  pair_counts_t counts;
  for (int k = 0; k < op_kinds_count; ++k) counts.ops[k] = s.counts[k].load();
  counts.bytes = s.bytes.load();
  return counts;
}

// ---- local checks ----

void check_local_status(const status_t& status, int rank, tag_t tag, std::size_t size,
                        const void* buffer, const void* user_context, const std::string& what,
                        error_log_t& errors) {
  if (!status.is_done()) {
    errors.fail(what + ": completed with " + status.error.get_str());
    return;
  }
  if (status.rank != rank) errors.fail(what + ": status.rank " + std::to_string(status.rank));
  if (status.tag != tag) errors.fail(what + ": status.tag " + std::to_string(status.tag));
  if (status.size != size) errors.fail(what + ": status.size " + std::to_string(status.size));
  if (status.buffer != buffer) errors.fail(what + ": status.buffer is not its buffer");
  if (status.user_context != user_context) {
    errors.fail(what + ": status.user_context is not its user_context");
  }
}

void check_received_bytes(const epoch_plan_t& plan, const op_plan_t& op, const void* buffer,
                          const std::string& what, error_log_t& errors) {
  std::size_t wrong = op.size;
  if (op.kind == op_kind_t::send) {
    wrong = check_payload(buffer, op.size, key_of(plan, op));
  } else if (op.kind == op_kind_t::get || op.kind == op_kind_t::get_signal) {
    wrong = check_get_area(buffer, op.size, plan.seed, plan.epoch, op.target, op.remote_offset);
  }
  if (wrong != op.size) {
    errors.fail(what + ": byte " + std::to_string(wrong) + " of " + std::to_string(op.size) +
                " received is wrong");
  }
}

void check_put_area(const epoch_plan_t& plan, const std::uint8_t* area, error_log_t& errors) {
  const std::size_t size = plan.put_area_bytes[static_cast<std::size_t>(plan.me)];
  std::vector<std::uint8_t> image(size);
  fill_canary(image.data(), size, plan.seed, plan.epoch, plan.me);
  for (const op_plan_t* op : plan.puts_in) {
    fill_payload(image.data() + op->remote_offset, op->size, key_of(plan, *op));
  }
  if (std::memcmp(image.data(), area, size) == 0) return;
  std::size_t wrong = 0;
  while (image[wrong] == area[wrong]) ++wrong;
  for (const op_plan_t* op : plan.puts_in) {
    if (wrong >= op->remote_offset && wrong < op->remote_offset + op->size) {
      errors.fail(op->describe() + ": after the epoch, byte " +
                  std::to_string(wrong - op->remote_offset) + " of its region is wrong");
      return;
    }
  }
  errors.fail("put area of rank " + std::to_string(plan.me) + ": byte " + std::to_string(wrong) +
              " outside every put's region was overwritten (a stray or misplaced put)");
}

}  // namespace lci::soak
