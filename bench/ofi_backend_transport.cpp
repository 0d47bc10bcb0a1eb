// LCI-backend transport of the libfabric benchmarks (see
// ofi_backend_transport.hpp).
#include "bench/ofi_backend_transport.hpp"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/ofi/ofi_context.hpp"
#include "bench/bootstrap_allgather.hpp"
#include "lci/bootstrap/bootstrap.hpp"
#include "lci/util/spinlock.hpp"

namespace lci::bench {

namespace {

// Completions one poll reads (as LCI's progress).
constexpr std::size_t poll_batch_max = 16;

std::string provider_name() {
  const char* name = std::getenv("LCI_ATTR_OFI_PROVIDER_NAME");
  return name != nullptr ? name : "";
}

void check_posted(const char* call, error_t error) {
  if (!error.is_done() && !error.is_posted()) fail(call, "refused with a non-retry error");
}

class backend_channel_t;

// One net_device_t, the channels that use it (by thread index) and the
// receive buffers posted on it.
class backend_endpoint_t {
 public:
  backend_endpoint_t(backend::net_context_t& context, const options_t& options,
                     std::size_t threads_sharing)
      : recv_size_bytes_(options.message_size_max_bytes()),
        recv_buffer_(recv_size_bytes_ * options.window * threads_sharing),
        channels_(static_cast<std::size_t>(options.threads), nullptr) {
    backend::net_device_attr_t requested;
    requested.net_max_recvs = options.window * threads_sharing;
    device_ = context.alloc_device(requested);
    if (device_->attr().net_max_recvs < requested.net_max_recvs) {
      fail("alloc_device", "the device takes " + std::to_string(device_->attr().net_max_recvs) +
                               " posted receives, the window needs " +
                               std::to_string(requested.net_max_recvs));
    }
    if (device_->attr().requires_local_mr &&
        options.message_size_max_bytes() > device_->attr().inject_size_max) {
      fail("alloc_device", "the device needs registered send buffers (not implemented here)");
    }
    for (std::size_t offset = 0; offset < recv_buffer_.size(); offset += recv_size_bytes_) {
      post_recv(recv_buffer_.data() + offset);
    }
  }

  backend::net_device_t& device() { return *device_; }
  void attach(int thread_index, backend_channel_t* channel) {
    channels_[static_cast<std::size_t>(thread_index)] = channel;
  }

  // Posts again the receives the device refused, then reads one batch of
  // completions and hands each to its channel; from any thread.
  void poll();

 private:
  void post_recv(void* buffer) {
    // Packets go unregistered under every backend (backends/backend.hpp).
    const error_t error =
        device_->post_recv(buffer, recv_size_bytes_, backend::net_mr_t{}, nullptr);
    if (error.is_retry()) {
      unposted_lock_.lock();
      unposted_.push_back(buffer);
      // relaxed: a hint; the buffers themselves are read under the lock.
      has_unposted_.store(true, std::memory_order_relaxed);
      unposted_lock_.unlock();
      return;
    }
    check_posted("post_recv", error);
  }

  const std::size_t recv_size_bytes_;
  std::vector<char> recv_buffer_;
  std::unique_ptr<backend::net_device_t> device_;
  std::vector<backend_channel_t*> channels_;  // by thread index; set before the exchange
  util::spinlock_t unposted_lock_;
  std::vector<void*> unposted_;  // under unposted_lock_
  // Set with a buffer in unposted_, so that polls skip the lock otherwise.
  std::atomic<bool> has_unposted_{false};
};

class backend_channel_t final : public channel_t {
 public:
  backend_channel_t(const options_t& options, backend_endpoint_t& endpoint, int partner,
                    int thread_index)
      : endpoint_(endpoint),
        partner_(partner),
        imm_(static_cast<backend::net_imm_data_t>(thread_index)),
        send_buffer_(options.message_size_max_bytes(), 's') {
    endpoint_.attach(thread_index, this);
  }

  void expect(std::size_t /*count*/, std::size_t size_bytes) override {
    // relaxed: the reader is whichever thread polls the device, ordered
    // after this store only through the network (the partner sends after
    // the announcement), which C++ does not see; msgrate announces one
    // size for the whole run, so a stale read still checks the right size.
    expected_size_bytes_.store(size_bytes, std::memory_order_relaxed);
  }

  bool try_send(std::size_t size_bytes) override {
    backend::net_device_t& device = endpoint_.device();
    const bool inject = size_bytes <= device.attr().inject_size_max;
    const error_t error = inject
                              ? device.post_sends(partner_, send_buffer_.data(), size_bytes, imm_)
                              : device.post_send(partner_, send_buffer_.data(), size_bytes,
                                                 backend::net_mr_t{}, imm_, this);
    if (error.is_retry()) return false;
    check_posted(inject ? "post_sends" : "post_send", error);
    if (!inject) ++sends_posted_;
    return true;
  }

  std::size_t poll() override {
    endpoint_.poll();
    // relaxed: a count; no payload is read after it.
    return arrived_.exchange(0, std::memory_order_relaxed);
  }

  std::size_t sends_pending() const override {
    // relaxed: a count (the buffer is never rewritten).
    return sends_posted_ - sends_done_.load(std::memory_order_relaxed);
  }

  // From whichever thread polled the completion.
  void arrive(const backend::net_status_t& status) {
    const std::size_t expected = expected_size_bytes_.load(std::memory_order_relaxed);
    if (status.rank != partner_ || status.length != expected) {
      fail("backend arrival",
           std::to_string(status.length) + " bytes from rank " + std::to_string(status.rank) +
               ", expected " + std::to_string(expected) + " from rank " + std::to_string(partner_));
    }
    arrived_.fetch_add(1, std::memory_order_relaxed);  // relaxed: see poll()
  }
  void send_done() { sends_done_.fetch_add(1, std::memory_order_relaxed); }

 private:
  backend_endpoint_t& endpoint_;
  const int partner_;
  const backend::net_imm_data_t imm_;
  std::vector<char> send_buffer_;
  std::size_t sends_posted_ = 0;  // owner thread only
  std::atomic<std::size_t> expected_size_bytes_{0};
  // Counted by the thread that polled the completion, taken by the owner.
  std::atomic<std::size_t> arrived_{0};
  std::atomic<std::size_t> sends_done_{0};
};

void backend_endpoint_t::poll() {
  // relaxed: a buffer missed here is posted by the next poll.
  if (has_unposted_.load(std::memory_order_relaxed)) {
    unposted_lock_.lock();
    std::vector<void*> buffers;
    buffers.swap(unposted_);
    has_unposted_.store(false, std::memory_order_relaxed);
    unposted_lock_.unlock();
    for (void* buffer : buffers) post_recv(buffer);
  }
  backend::net_status_t statuses[poll_batch_max];
  const std::size_t polled = device_->poll_comp(statuses, poll_batch_max);
  for (std::size_t i = 0; i < polled; ++i) {
    const backend::net_status_t& status = statuses[i];
    if (status.fault != backend::net_fault_t::none) {
      fail("poll_comp", backend::describe_fault(status));
    }
    if (status.opcode == backend::net_opcode_t::send) {
      static_cast<backend_channel_t*>(status.user_context)->send_done();
      continue;
    }
    if (status.opcode != backend::net_opcode_t::recv || status.imm_data >= channels_.size() ||
        channels_[status.imm_data] == nullptr) {
      fail("poll_comp", std::string("an unexpected ") + backend::get_net_opcode_str(status.opcode) +
                            " completion");
    }
    channels_[status.imm_data]->arrive(status);
    post_recv(status.buffer);
  }
}

class backend_transport_t final : public transport_t {
 public:
  explicit backend_transport_t(const options_t& options)
      : options_(options),
        bootstrap_(bootstrap::open_bootstrap()),
        context_(*bootstrap_, provider_name()) {
    const bool dedicated = options.devices == devices_kind_t::dedicated;
    const int endpoints = dedicated ? options.threads : 1;
    for (int e = 0; e < endpoints; ++e) {  // collective: same order on every rank
      endpoints_.push_back(std::make_unique<backend_endpoint_t>(
          context_, options, dedicated ? 1 : static_cast<std::size_t>(options.threads)));
    }
  }
  ~backend_transport_t() override {
    channels_.clear();
    endpoints_.clear();
  }

  int rank_me() const override { return context_.rank_me(); }
  int rank_n() const override { return context_.rank_n(); }
  const char* name() const override { return "backend"; }

  channel_t& open_channel(int thread_index) override {
    backend_endpoint_t& endpoint = *endpoints_[endpoints_.size() == 1 ? 0 : thread_index];
    const int partner = (rank_me() + rank_n() / 2) % rank_n();
    channels_.push_back(
        std::make_unique<backend_channel_t>(options_, endpoint, partner, thread_index));
    return *channels_.back();
  }

  void barrier() override { bootstrap_->barrier(); }

  std::vector<double> allgather(double value) override {
    return allgather_by_bootstrap(*bootstrap_, "backend_allgather_" + std::to_string(allgathers_++),
                                  value);
  }

 private:
  const options_t options_;
  std::unique_ptr<bootstrap::bootstrap_t> bootstrap_;
  backend::ofi::ofi_context_t context_;
  std::vector<std::unique_ptr<backend_endpoint_t>> endpoints_;
  std::vector<std::unique_ptr<backend_channel_t>> channels_;
  std::uint64_t allgathers_ = 0;  // names each allgather's key
};

}  // namespace

std::unique_ptr<transport_t> make_backend_transport(const options_t& options) {
  return std::make_unique<backend_transport_t>(options);
}

}  // namespace lci::bench
