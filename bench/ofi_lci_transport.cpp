// LCI transport of the libfabric benchmarks (see ofi_lci_transport.hpp).
#include "bench/ofi_lci_transport.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "lci.hpp"

namespace lci::bench {

namespace {

// The tag of allgather's messages: above every thread's tag.
constexpr tag_t allgather_tag = 1000;

// Progresses `device` until `post` is taken (anything but retry).
template <typename post_t>
status_t post_until_taken(device_t device, const post_t& post) {
  status_t status = post();
  while (status.is_retry()) {
    (void)progress_x().device(device)();
    status = post();
  }
  return status;
}

class lci_channel_t final : public channel_t {
 public:
  lci_channel_t(const options_t& options, device_t device, int partner, int thread_index,
                rcomp_t rcomp)
      : op_(options.op),
        am_in_packet_(options.am_buffer == am_buffer_kind_t::packet),
        device_(device),
        partner_(partner),
        tag_(static_cast<tag_t>(thread_index)),
        rcomp_(rcomp),
        send_buffer_(options.message_size_max_bytes(), 's'),
        receive_slots_(options),
        arrivals_(alloc_cq_x().zero_copy_am(am_in_packet_)()),
        sends_done_(alloc_counter()) {
    // Every rank registers its threads' queues in the same order, at the
    // same reserved ids: thread t's partner queue is rcomp_ there too.
    if (op_ == op_kind_t::am) (void)register_rcomp_x(arrivals_).rcomp(rcomp_)();
  }
  ~lci_channel_t() override {
    if (op_ == op_kind_t::am) deregister_rcomp(rcomp_);
    free_comp(&sends_done_);
    free_comp(&arrivals_);
  }

  void expect(std::size_t count, std::size_t size_bytes) override {
    expected_size_bytes_ = size_bytes;
    if (op_ == op_kind_t::am) return;  // the runtime's packets receive them
    for (std::size_t i = 0; i < count; ++i) {
      void* const slot = receive_slots_.next();
      const status_t status = post_until_taken(device_, [&] {
        return post_recv_x(partner_, slot, size_bytes, tag_, arrivals_)
            .device(device_)();
      });
      if (status.is_done()) check_arrival(status);  // it had arrived already
    }
  }

  bool try_send(std::size_t size_bytes) override {
    const status_t status =
        op_ == op_kind_t::am
            ? post_am_x(partner_, send_buffer_.data(), size_bytes, sends_done_, rcomp_)
                  .device(device_)()
            : post_send_x(partner_, send_buffer_.data(), size_bytes, tag_, sends_done_)
                  .device(device_)();
    if (status.is_retry()) return false;
    if (status.is_posted()) ++sends_posted_;
    return true;
  }

  std::size_t poll() override {
    (void)progress_x().device(device_)();
    for (status_t status = cq_pop(arrivals_); status.is_done(); status = cq_pop(arrivals_)) {
      check_arrival(status);
      if (op_ != op_kind_t::am) continue;
      if (am_in_packet_) {
        put_upacket(status.buffer);
      } else {
        std::free(status.buffer);
      }
    }
    const std::size_t arrived = arrived_;
    arrived_ = 0;
    return arrived;
  }

  std::size_t sends_pending() const override {
    return sends_posted_ - static_cast<std::size_t>(counter_get(sends_done_));
  }

 private:
  void check_arrival(const status_t& status) {
    if (status.rank != partner_ || status.size != expected_size_bytes_) {
      fail("lci arrival", std::to_string(status.size) + " bytes from rank " +
                              std::to_string(status.rank) + ", expected " +
                              std::to_string(expected_size_bytes_) + " from rank " +
                              std::to_string(partner_));
    }
    ++arrived_;
  }

  const op_kind_t op_;
  const bool am_in_packet_;  // --am-buffer packet
  const device_t device_;
  const int partner_;
  const tag_t tag_;
  const rcomp_t rcomp_;
  std::vector<char> send_buffer_;
  receive_slots_t receive_slots_;
  comp_t arrivals_;
  comp_t sends_done_;
  std::size_t sends_posted_ = 0;  // sends that complete through sends_done_
  std::size_t arrived_ = 0;       // since the last poll()
  std::size_t expected_size_bytes_ = 0;  // of the arrivals expect() announced last
};

class lci_transport_t final : public transport_t {
 public:
  explicit lci_transport_t(const options_t& options) : options_(options) {
    g_runtime_init();
    rank_me_ = get_rank_me();
    rank_n_ = get_rank_n();
    rcomp_base_ = reserve_rcomps(static_cast<rcomp_t>(options.threads));
  }
  ~lci_transport_t() override {
    channels_.clear();
    for (device_t& device : devices_) free_device(&device);
    g_runtime_fina();
  }

  int rank_me() const override { return rank_me_; }
  int rank_n() const override { return rank_n_; }
  const char* name() const override { return "lci"; }

  channel_t& open_channel(int thread_index) override {
    device_t device = get_default_device();
    if (options_.devices == devices_kind_t::dedicated) {
      devices_.push_back(alloc_device());  // collective: same order on every rank
      device = devices_.back();
    }
    const int partner = (rank_me_ + rank_n_ / 2) % rank_n_;
    channels_.push_back(std::make_unique<lci_channel_t>(
        options_, device, partner, thread_index, rcomp_base_ + static_cast<rcomp_t>(thread_index)));
    return *channels_.back();
  }

  void barrier() override { lci::barrier(); }

  // One send to and one receive from every other rank, on the default
  // device; allow_done(false) makes each signal the counter.
  std::vector<double> allgather(double value) override {
    std::vector<double> values(static_cast<std::size_t>(rank_n_), value);
    comp_t done = alloc_counter();
    const device_t device = get_default_device();
    for (int rank = 0; rank < rank_n_; ++rank) {
      if (rank == rank_me_) continue;
      (void)post_until_taken(device, [&] {
        return post_recv_x(rank, &values[rank], sizeof(double), allgather_tag, done)
            .allow_done(false)();
      });
      (void)post_until_taken(device, [&] {
        return post_send_x(rank, &value, sizeof(double), allgather_tag, done).allow_done(false)();
      });
    }
    while (counter_get(done) < 2 * (rank_n_ - 1)) (void)progress();
    free_comp(&done);
    return values;
  }

 private:
  const options_t options_;
  int rank_me_ = 0;
  int rank_n_ = 0;
  rcomp_t rcomp_base_ = 0;
  std::vector<device_t> devices_;  // dedicated devices, in thread order
  std::vector<std::unique_ptr<lci_channel_t>> channels_;
};

}  // namespace

std::unique_ptr<transport_t> make_lci_transport(const options_t& options) {
  return std::make_unique<lci_transport_t>(options);
}

}  // namespace lci::bench
