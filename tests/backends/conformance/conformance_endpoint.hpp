// endpoint_t: the conformance suite's view of one device — a device, its
// registered receive buffers and multi-receive buffers (kept posted), and
// every completion polled from it, sorted by kind. Only backends/backend.hpp
// is used.
//
// Thread safety: poll(), post() and wait_for() may run from several threads
//                of one rank; the completion lists are guarded by a mutex
//                that is never held across a backend call (a simulated
//                backend may switch fibers inside one). The post_*_buffers
//                calls come first, from one thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "tests/backends/conformance/conformance.hpp"

namespace lci::conformance {

// A post retried this many times in a row fails the test (a livelock).
inline constexpr std::size_t retries_max = 5'000'000;

struct received_t {
  backend::net_status_t status;
  std::string data;  // the payload, copied at poll time
};

// The byte at `index` of message (source, seq): a pattern a receiver checks.
inline char pattern_byte(int source, std::size_t seq, std::size_t index) {
  return static_cast<char>((source * 131 + seq * 7 + index * 3 + 1) & 0xFF);
}
inline std::string pattern(int source, std::size_t seq, std::size_t size) {
  std::string text(size, '\0');
  for (std::size_t i = 0; i < size; ++i) text[i] = pattern_byte(source, seq, i);
  return text;
}

class endpoint_t {
 public:
  explicit endpoint_t(rank_ctx_t& ctx, const backend::net_device_attr_t& requested = {})
      : ctx_(ctx), device_(ctx.context().alloc_device(requested)) {
    LCI_CONFORM(device_ != nullptr, "alloc_device returned null");
    rank = ctx.context().rank_me();
    ranks = ctx.context().rank_n();
    ctx_.add_poller(this, [this] { poll(); });
  }
  ~endpoint_t() {
    ctx_.remove_poller(this);
    for (backend::net_mr_t& mr : mrs_) device_->deregister_memory(&mr);
  }

  backend::net_device_t& device() { return *device_; }
  const backend::net_device_attr_t& attr() const { return device_->attr(); }

  // Registers [address, address + size), retrying while the backend says so.
  backend::net_mr_t register_region(void* address, std::size_t size) {
    backend::net_mr_t mr;
    post("register_memory", [&] { return device_->register_memory(address, size, &mr); });
    LCI_CONFORM(!mr.is_empty(), "register_memory returned done with an empty mr");
    LCI_CONFORM(mr.base == address && mr.size == size, "mr does not describe the region");
    mrs_.push_back(mr);
    return mr;
  }

  // Posts `count` receive buffers of `size` bytes; each is reposted after
  // its message has been copied out by poll().
  void post_recv_buffers(std::size_t count, std::size_t size) {
    recv_size_ = size;
    recv_arena_.assign(count * size, '\0');
    recv_mr_ = register_region(recv_arena_.data(), recv_arena_.size());
    for (std::size_t i = 0; i < count; ++i) post_one_recv({false, i});
  }

  // Posts `count` multi-receive buffers (post_recv_multi) of `size` bytes,
  // each with its own user_context; poll() checks every message against its
  // buffer (take_multi_locked) and reposts a buffer once it is released.
  void post_recv_multi_buffers(std::size_t count, std::size_t size) {
    LCI_CONFORM(multi_.empty(), "multi-receive buffers posted twice");
    multi_ = std::vector<multi_buffer_t>(count);  // fixed from here: contexts point at them
    for (multi_buffer_t& buffer : multi_) buffer.bytes.assign(size, '\0');
    for (std::size_t i = 0; i < count; ++i) post_one_recv({true, i});
  }

  // Retries op() (polling in between) until it is accepted.
  template <typename Op>
  error_t post(const char* what, Op&& op) {
    for (std::size_t tries = 0;; ++tries) {
      const error_t error = op();
      if (!error.is_retry()) {
        LCI_CONFORM(error.is_done() || error.is_posted(), what << " returned " << error.get_str());
        return error;
      }
      LCI_CONFORM(tries < retries_max, what << " retried " << retries_max << " times");
      {
        std::lock_guard<std::mutex> guard(mutex_);
        ++retries_count_;
      }
      poll();
      ctx_.wait(what);
    }
  }

  // Polls once; returns how many completions it moved.
  std::size_t poll();

  void wait_for(const std::function<bool()>& done, const char* what) {
    for (std::size_t turns = 0; !done(); ++turns) {
      LCI_CONFORM(turns < retries_max, "waited " << retries_max << " turns for " << what);
      poll();
      ctx_.wait(what);
    }
  }

  // Copies of the lists (thread-safe).
  std::vector<received_t> received() {
    std::lock_guard<std::mutex> guard(mutex_);
    return received_;
  }
  std::vector<backend::net_status_t> local() {
    std::lock_guard<std::mutex> guard(mutex_);
    return local_;
  }
  std::vector<backend::net_status_t> remote_writes() {
    std::lock_guard<std::mutex> guard(mutex_);
    return remote_writes_;
  }
  std::size_t received_count() {
    std::lock_guard<std::mutex> guard(mutex_);
    return received_.size();
  }
  std::size_t local_count() {
    std::lock_guard<std::mutex> guard(mutex_);
    return local_.size();
  }
  std::size_t remote_write_count() {
    std::lock_guard<std::mutex> guard(mutex_);
    return remote_writes_.size();
  }
  // The backend's own dead-peer reports (opcode peer_down).
  std::vector<backend::net_status_t> peer_reports() {
    std::lock_guard<std::mutex> guard(mutex_);
    return peer_reports_;
  }
  std::size_t retries_count() {
    std::lock_guard<std::mutex> guard(mutex_);
    return retries_count_;
  }
  // Multi-receive buffers the backend has released so far.
  std::size_t multi_releases_count() {
    std::lock_guard<std::mutex> guard(mutex_);
    return multi_releases_count_;
  }

  // How many completions poll() asks for: `larger` and `smaller` in turn
  // (each in [1, poll_batch_max]; set before any thread polls). A backend
  // that kept more for its next poll than that poll has room for would
  // write past it then.
  void set_poll_batches(std::size_t larger, std::size_t smaller) {
    LCI_CONFORM(smaller >= 1 && smaller <= larger && larger <= poll_batch_max,
                "poll batches " << larger << ", " << smaller);
    poll_batches_[0] = larger;
    poll_batches_[1] = smaller;
  }

  int rank = -1;
  int ranks = 0;

 private:
  static constexpr std::size_t poll_batch_max = 16;

  // A posted buffer: the index-th of post_recv_buffers or of
  // post_recv_multi_buffers.
  struct recv_ref_t {
    bool multi;
    std::size_t index;
  };
  struct multi_buffer_t {
    std::vector<char> bytes;
    bool posted = false;             // under mutex_
    std::vector<received_t> landed;  // since it was posted; under mutex_
    std::size_t end_bytes = 0;       // past the last byte they took; under mutex_
  };
  static constexpr std::size_t no_multi = ~std::size_t{0};

  error_t post_buffer(recv_ref_t ref) {
    if (!ref.multi) {
      void* buffer = recv_arena_.data() + ref.index * recv_size_;
      auto* context = reinterpret_cast<void*>(ref.index + 1);
      return device_->post_recv(buffer, recv_size_, recv_mr_, context);
    }
    multi_buffer_t& buffer = multi_[ref.index];
    set_posted(&buffer, true);  // before the call: its messages may be polled at once
    const error_t error =
        device_->post_recv_multi(buffer.bytes.data(), buffer.bytes.size(), &buffer);
    if (error.is_retry()) set_posted(&buffer, false);
    return error;
  }
  void set_posted(multi_buffer_t* buffer, bool posted) {
    std::lock_guard<std::mutex> guard(mutex_);
    buffer->posted = posted;
  }
  void post_one_recv(recv_ref_t ref) {
    post(ref.multi ? "post_recv_multi" : "post_recv", [&] { return post_buffer(ref); });
  }
  // One attempt, no polling (poll() calls it): a refused repost is tried
  // again by the next poll().
  void repost_once(recv_ref_t ref) {
    const error_t error = post_buffer(ref);
    if (!error.is_retry()) {
      LCI_CONFORM(error.is_done(), "repost returned " << error.get_str());
      return;
    }
    std::lock_guard<std::mutex> guard(mutex_);
    to_repost_.push_back(ref);
  }
  // The multi-receive buffer whose user_context this is, or no_multi.
  std::size_t multi_index(const void* context) const {
    for (std::size_t i = 0; i < multi_.size(); ++i) {
      if (context == &multi_[i]) return i;
    }
    return no_multi;
  }
  void take_recv_locked(const backend::net_status_t& status, std::vector<recv_ref_t>* repost);
  void take_multi_locked(const backend::net_status_t& status, std::size_t index,
                         std::vector<recv_ref_t>* repost);
  void release_multi_locked(const backend::net_status_t& status, std::size_t index,
                            std::vector<recv_ref_t>* repost);

  rank_ctx_t& ctx_;
  std::vector<backend::net_mr_t> mrs_;
  std::vector<char> recv_arena_;
  std::size_t recv_size_ = 0;
  backend::net_mr_t recv_mr_;
  std::mutex mutex_;  // guards the lists below; never held across a backend call
  std::vector<received_t> received_;
  std::vector<backend::net_status_t> local_;
  std::vector<backend::net_status_t> remote_writes_;
  std::vector<backend::net_status_t> peer_reports_;
  std::vector<recv_ref_t> to_repost_;
  std::size_t retries_count_ = 0;  // statistic, under mutex_
  std::size_t poll_batches_[2] = {poll_batch_max, poll_batch_max};
  std::atomic<std::size_t> polls_count_{0};  // picks the batch; relaxed, a turn counter
  std::vector<multi_buffer_t> multi_;
  std::size_t multi_releases_count_ = 0;  // under mutex_
  // Last: destroyed (closing the device) before the receive buffers go.
  std::unique_ptr<backend::net_device_t> device_;
};

inline std::size_t endpoint_t::poll() {
  const std::size_t batch_max = poll_batches_[polls_count_.fetch_add(1, std::memory_order_relaxed) % 2];
  // Poisoned first: poll_comp must write every field of what it returns
  // (the runtime passes uninitialised storage), so a field it leaves alone
  // shows up as the poison in the checks below and in each test's own. The
  // entry after the batch must stay poisoned: poll_comp writes at most
  // statuses_max entries.
  backend::net_status_t poison;
  poison.opcode = static_cast<backend::net_opcode_t>(0xa5);
  poison.fault = static_cast<backend::net_fault_t>(0xa5);
  poison.rank = -0x5a5a;
  poison.user_context = reinterpret_cast<void*>(std::uintptr_t{0xa5a5a5a5});
  poison.buffer = poison.user_context;
  poison.length = 0xa5a5a5a5;
  poison.imm_data = 0xa5a5a5a5;
  poison.fault_address = 0xa5a5a5a5;
  poison.buffer_released = true;
  poison.buffer_messages = 0xa5a5a5a5;
  backend::net_status_t statuses[poll_batch_max + 1];
  std::fill(statuses, statuses + batch_max + 1, poison);
  const std::size_t count = device_->poll_comp(statuses, batch_max);
  LCI_CONFORM(count <= batch_max, "poll_comp returned more than asked: " << count);
  const backend::net_status_t& after = statuses[batch_max];
  LCI_CONFORM(after.opcode == poison.opcode && after.fault == poison.fault &&
                  after.rank == poison.rank && after.user_context == poison.user_context &&
                  after.buffer == poison.buffer && after.length == poison.length &&
                  after.imm_data == poison.imm_data &&
                  after.fault_address == poison.fault_address &&
                  after.buffer_released == poison.buffer_released &&
                  after.buffer_messages == poison.buffer_messages,
              "poll_comp wrote past the " << batch_max << " statuses it was given");
  for (std::size_t i = 0; i < count; ++i) {
    const backend::net_status_t& status = statuses[i];
    LCI_CONFORM(status.opcode <= backend::net_opcode_t::peer_down,
                "completion with opcode " << static_cast<int>(status.opcode));
    LCI_CONFORM(status.fault <= backend::net_fault_t::peer_crashed,
                "completion with fault " << static_cast<int>(status.fault));
    LCI_CONFORM(status.fault != backend::net_fault_t::none || status.fault_address == 0,
                "a completion without a fault has fault_address " << status.fault_address);
    LCI_CONFORM(status.opcode == backend::net_opcode_t::recv || !status.buffer_released,
                get_net_opcode_str(status.opcode) << " completion with buffer_released");
    LCI_CONFORM(status.buffer_released || status.buffer_messages == 0,
                "a completion without buffer_released has buffer_messages "
                    << status.buffer_messages);
  }
  std::vector<recv_ref_t> repost;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    repost.swap(to_repost_);
    for (std::size_t i = 0; i < count; ++i) {
      const backend::net_status_t& status = statuses[i];
      if (status.opcode == backend::net_opcode_t::recv) {  // checks its rank (or has none)
        take_recv_locked(status, &repost);
        continue;
      }
      LCI_CONFORM(status.rank >= 0 && status.rank < ranks, "completion rank " << status.rank);
      if (status.opcode == backend::net_opcode_t::remote_write) {
        remote_writes_.push_back(status);
      } else if (status.opcode == backend::net_opcode_t::peer_down) {
        peer_reports_.push_back(status);
      } else {
        local_.push_back(status);
      }
    }
  }
  for (recv_ref_t ref : repost) repost_once(ref);
  return count;
}

inline void endpoint_t::take_recv_locked(const backend::net_status_t& status,
                                         std::vector<recv_ref_t>* repost) {
  LCI_CONFORM(status.fault == backend::net_fault_t::none, "a recv with a fault");
  const std::size_t multi = multi_index(status.user_context);
  if (multi != no_multi) {
    take_multi_locked(status, multi, repost);
    return;
  }
  LCI_CONFORM(status.rank >= 0 && status.rank < ranks, "recv completion rank " << status.rank);
  const auto index = reinterpret_cast<std::uintptr_t>(status.user_context);
  LCI_CONFORM(recv_size_ > 0 && index >= 1 && index * recv_size_ <= recv_arena_.size(),
              "recv completion with a foreign user_context " << index);
  LCI_CONFORM(status.buffer == recv_arena_.data() + (index - 1) * recv_size_,
              "recv completion's buffer is not its user_context's buffer");
  LCI_CONFORM(status.length <= recv_size_, "recv longer than its buffer");
  LCI_CONFORM(!status.buffer_released, "a post_recv buffer's completion has buffer_released");
  received_.push_back(
      received_t{status, std::string(static_cast<const char*>(status.buffer), status.length)});
  repost->push_back({false, index - 1});
}

// A completion of multi-receive buffer `index`: a message, which must lie
// inside the buffer, overlap none that landed there since it was posted,
// and find at least multi_recv_min_free bytes free (else the buffer should
// have been released); with buffer_released, also the release. Or a release
// of its own (buffer nullptr, length 0), which backend.hpp allows.
// buffer_messages is checked by the release.
inline void endpoint_t::take_multi_locked(const backend::net_status_t& status, std::size_t index,
                                          std::vector<recv_ref_t>* repost) {
  multi_buffer_t& buffer = multi_[index];
  LCI_CONFORM(buffer.posted, "a completion of multi-receive buffer " << index
                                                                     << " while not posted");
  if (status.buffer == nullptr && status.length == 0 && status.buffer_released) {
    release_multi_locked(status, index, repost);
    return;
  }
  LCI_CONFORM(status.rank >= 0 && status.rank < ranks, "recv completion rank " << status.rank);
  const auto base = reinterpret_cast<std::uintptr_t>(buffer.bytes.data());
  const auto address = reinterpret_cast<std::uintptr_t>(status.buffer);
  const std::size_t size = buffer.bytes.size();
  LCI_CONFORM(address >= base && address - base <= size && status.length <= size - (address - base),
              "a message of " << status.length << " bytes at " << status.buffer
                              << " outside its multi-receive buffer " << index);
  const std::size_t start = address - base;
  const std::size_t end = start + status.length;
  const std::size_t min_free = attr().multi_recv_min_free;
  LCI_CONFORM(size - buffer.end_bytes >= min_free,
              "a message landed in multi-receive buffer " << index << " with "
                  << size - buffer.end_bytes << " bytes free, below multi_recv_min_free "
                  << min_free);
  for (const received_t& other : buffer.landed) {
    const std::size_t other_start =
        static_cast<const char*>(other.status.buffer) - buffer.bytes.data();
    const bool apart = end <= other_start || other_start + other.status.length <= start;
    LCI_CONFORM(status.length == 0 || other.status.length == 0 || apart,
                "messages overlap in multi-receive buffer " << index << ": [" << start << ", "
                    << end << ") and [" << other_start << ", "
                    << other_start + other.status.length << ")");
  }
  const received_t message{status, std::string(buffer.bytes.data() + start, status.length)};
  buffer.landed.push_back(message);
  received_.push_back(message);
  buffer.end_bytes = std::max(buffer.end_bytes, end);
  if (status.buffer_released) release_multi_locked(status, index, repost);
}

// The backend gives buffer `index` back (`status`): it must have less than
// multi_recv_min_free bytes free, count in buffer_messages every message
// that landed since it was posted, and have each still in place
// (backend.hpp). Then it is reposted.
inline void endpoint_t::release_multi_locked(const backend::net_status_t& status,
                                             std::size_t index, std::vector<recv_ref_t>* repost) {
  multi_buffer_t& buffer = multi_[index];
  LCI_CONFORM(status.buffer_messages == buffer.landed.size(),
              "multi-receive buffer " << index << " released with buffer_messages "
                  << status.buffer_messages << " after " << buffer.landed.size()
                  << " messages");
  const std::size_t free_bytes = buffer.bytes.size() - buffer.end_bytes;
  LCI_CONFORM(free_bytes < attr().multi_recv_min_free,
              "multi-receive buffer " << index << " released with " << free_bytes
                  << " bytes free, not below multi_recv_min_free "
                  << attr().multi_recv_min_free);
  for (const received_t& message : buffer.landed) {
    LCI_CONFORM(std::memcmp(message.status.buffer, message.data.data(), message.data.size()) == 0,
                "a message's bytes in multi-receive buffer " << index
                    << " changed before the buffer was released");
  }
  buffer.landed.clear();
  buffer.end_bytes = 0;
  buffer.posted = false;
  ++multi_releases_count_;
  repost->push_back({true, index});
}

}  // namespace lci::conformance
