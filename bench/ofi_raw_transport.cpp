// Raw-libfabric transport of the libfabric benchmarks (see
// ofi_raw_transport.hpp).
#include "bench/ofi_raw_transport.hpp"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bootstrap_allgather.hpp"
#include "lci/bootstrap/bootstrap.hpp"
#include "lci/util/spinlock.hpp"

namespace lci::bench {

namespace {

constexpr std::uint32_t fi_api_version = FI_VERSION(1, 17);
// CQ entries one poll reads (LCI's progress reads batches of 16 too).
constexpr std::size_t cq_batch_max = 16;
constexpr std::size_t name_size_max = 1024;

void check_fi(const char* call, long rc) {
  if (rc != 0) fail(call, fi_strerror(static_cast<int>(-rc)));
}

const char* provider_name() {
  const char* name = std::getenv("LCI_ATTR_OFI_PROVIDER_NAME");
  return name != nullptr && name[0] != '\0' ? name : "shm";
}

fi_info* get_info() {
  fi_info* hints = fi_allocinfo();
  if (hints == nullptr) fail("fi_allocinfo", "out of memory");
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG | FI_TAGGED;
  hints->mode = 0;  // op contexts are ours to point anywhere
  hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
                                FI_MR_ENDPOINT;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
  hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
  hints->fabric_attr->prov_name = strdup(provider_name());  // fi_freeinfo frees it
  fi_info* info = nullptr;
  int rc = fi_getinfo(fi_api_version, nullptr, nullptr, 0, hints, &info);
  if (rc == 0 && (info->addr_format == FI_SOCKADDR || info->addr_format == FI_SOCKADDR_IN)) {
    // IP providers: loopback only (jobs run on this machine).
    fi_freeinfo(info);
    info = nullptr;
    rc = fi_getinfo(fi_api_version, "127.0.0.1", nullptr, FI_SOURCE, hints, &info);
  }
  fi_freeinfo(hints);
  if (rc != 0) {
    fail("fi_getinfo", std::string("provider '") + provider_name() + "' offers no FI_EP_RDM with "
                       "FI_MSG | FI_TAGGED and no modes: " + fi_strerror(-rc));
  }
  return info;
}

class raw_channel_t;

// An op context: which channel posted it, and for a receive its buffer
// (nullptr: a send). The provider asks for no FI_CONTEXT space, so all
// sends of a channel share one.
struct raw_context_t {
  raw_channel_t* channel;
  void* slot;
};

// One domain, RDM endpoint, CQ and AV (holding the single peer endpoint
// at fi_addr_t 0). shared: several channels use it, under lock_.
class raw_endpoint_t {
 public:
  raw_endpoint_t(fi_info* info, fid_fabric* fabric, bool shared) : shared_(shared) {
    inject_size_bytes_ = info->tx_attr->inject_size;
    check_fi("fi_domain", fi_domain(fabric, info, &domain_, nullptr));
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_MSG;
    cq_attr.wait_obj = FI_WAIT_NONE;
    check_fi("fi_cq_open", fi_cq_open(domain_, &cq_attr, &cq_, nullptr));
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    av_attr.count = 1;
    check_fi("fi_av_open", fi_av_open(domain_, &av_attr, &av_, nullptr));
    check_fi("fi_endpoint", fi_endpoint(domain_, info, &ep_, nullptr));
    check_fi("fi_ep_bind(cq)", fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV));
    check_fi("fi_ep_bind(av)", fi_ep_bind(ep_, &av_->fid, 0));
    check_fi("fi_enable", fi_enable(ep_));
  }
  ~raw_endpoint_t() {
    fi_close(&ep_->fid);
    fi_close(&cq_->fid);
    fi_close(&av_->fid);
    fi_close(&domain_->fid);
  }
  raw_endpoint_t(const raw_endpoint_t&) = delete;
  raw_endpoint_t& operator=(const raw_endpoint_t&) = delete;

  std::vector<char> name() const {
    std::vector<char> name(name_size_max);
    std::size_t size = name.size();
    check_fi("fi_getname", fi_getname(&ep_->fid, name.data(), &size));
    name.resize(size);
    return name;
  }
  void insert_peer(const std::vector<std::byte>& name) {
    fi_addr_t address = FI_ADDR_NOTAVAIL;
    if (fi_av_insert(av_, name.data(), 1, &address, 0, nullptr) != 1 || address != 0) {
      fail("fi_av_insert", "the peer endpoint's name was refused");
    }
  }

  // Held by every channel call when shared; free otherwise.
  void lock() {
    if (shared_) lock_.lock();
  }
  void unlock() {
    if (shared_) lock_.unlock();
  }
  fid_ep* ep() const { return ep_; }
  bool tagged() const { return shared_; }
  std::size_t inject_size_bytes() const { return inject_size_bytes_; }
  // Under lock(): reads one batch of completions and hands each to its
  // channel.
  void read_cq_locked();

 private:
  const bool shared_;
  std::size_t inject_size_bytes_ = 0;
  fid_domain* domain_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_av* av_ = nullptr;
  fid_ep* ep_ = nullptr;
  util::spinlock_t lock_;
};

class raw_channel_t final : public channel_t {
 public:
  // Posts one receive per message of a window, each into its own slot of
  // the largest message; every completed receive is posted again at once
  // (in the poll that reads it), so receives are never on the exchange's
  // path.
  raw_channel_t(const options_t& options, raw_endpoint_t& endpoint, int thread_index)
      : endpoint_(endpoint),
        tag_(static_cast<std::uint64_t>(thread_index)),
        recv_size_bytes_(options.message_size_max_bytes()),
        send_buffer_(options.message_size_max_bytes(), 's'),
        receive_slots_(options),
        send_context_{this, nullptr} {
    for (std::size_t i = 0; i < options.window; ++i) {
      recv_contexts_.push_back(raw_context_t{this, receive_slots_.next()});
    }
    endpoint_.lock();
    for (raw_context_t& context : recv_contexts_) post_recv_locked(&context);
    endpoint_.unlock();
  }

  void expect(std::size_t /*count*/, std::size_t size_bytes) override {
    endpoint_.lock();
    expected_size_bytes_ = size_bytes;
    endpoint_.unlock();
  }

  bool try_send(std::size_t size_bytes) override {
    fid_ep* ep = endpoint_.ep();
    void* buffer = send_buffer_.data();
    const bool inject = size_bytes <= endpoint_.inject_size_bytes();
    endpoint_.lock();
    long rc = 0;
    if (inject) {
      rc = endpoint_.tagged() ? fi_tinject(ep, buffer, size_bytes, 0, tag_)
                              : fi_inject(ep, buffer, size_bytes, 0);
    } else {
      rc = endpoint_.tagged() ? fi_tsend(ep, buffer, size_bytes, nullptr, 0, tag_, &send_context_)
                              : fi_send(ep, buffer, size_bytes, nullptr, 0, &send_context_);
    }
    endpoint_.unlock();
    if (rc == -FI_EAGAIN) return false;
    check_fi(inject ? "fi_inject" : "fi_send", rc);
    if (!inject) ++sends_posted_;
    return true;
  }

  std::size_t poll() override {
    endpoint_.lock();
    // Receives the provider refused to take back (never seen over shm: its
    // receive queue is far deeper than a window).
    for (std::size_t n = unposted_.size(); n > 0; --n) {
      raw_context_t* context = unposted_.back();
      unposted_.pop_back();
      post_recv_locked(context);
    }
    endpoint_.read_cq_locked();
    endpoint_.unlock();
    // relaxed: a count; no payload is read after it.
    return arrived_.exchange(0, std::memory_order_relaxed);
  }

  std::size_t sends_pending() const override {
    // relaxed: a count (the buffer is never rewritten).
    return sends_posted_ - sends_done_.load(std::memory_order_relaxed);
  }

  // Under the endpoint's lock, from whichever channel polled.
  void complete_locked(raw_context_t* context, std::size_t length_bytes) {
    if (context->slot == nullptr) {
      sends_done_.fetch_add(1, std::memory_order_relaxed);  // relaxed: see sends_pending()
      return;
    }
    if (length_bytes != expected_size_bytes_) {
      fail("raw arrival", std::to_string(length_bytes) + " bytes, expected " +
                              std::to_string(expected_size_bytes_));
    }
    arrived_.fetch_add(1, std::memory_order_relaxed);  // relaxed: see poll()
    post_recv_locked(context);
  }

 private:
  void post_recv_locked(raw_context_t* context) {
    const long rc =
        endpoint_.tagged()
            ? fi_trecv(endpoint_.ep(), context->slot, recv_size_bytes_, nullptr, FI_ADDR_UNSPEC,
                       tag_, 0, context)
            : fi_recv(endpoint_.ep(), context->slot, recv_size_bytes_, nullptr, FI_ADDR_UNSPEC,
                      context);
    if (rc == -FI_EAGAIN) {
      unposted_.push_back(context);
      return;
    }
    check_fi("fi_recv", rc);
  }

  raw_endpoint_t& endpoint_;
  const std::uint64_t tag_;
  const std::size_t recv_size_bytes_;
  std::vector<char> send_buffer_;
  receive_slots_t receive_slots_;
  std::vector<raw_context_t> recv_contexts_;  // one per slot; never reallocated after posting
  std::vector<raw_context_t*> unposted_;      // under the endpoint's lock
  raw_context_t send_context_;
  std::size_t expected_size_bytes_ = 0;  // under the endpoint's lock
  std::size_t sends_posted_ = 0;         // owner thread only
  // Counted by the thread that polled the completion (any thread when the
  // endpoint is shared), taken by the owner.
  std::atomic<std::size_t> arrived_{0};
  std::atomic<std::size_t> sends_done_{0};
};

void raw_endpoint_t::read_cq_locked() {
  fi_cq_msg_entry entries[cq_batch_max];
  const long read = fi_cq_read(cq_, entries, cq_batch_max);
  if (read == -FI_EAGAIN) return;
  if (read == -FI_EAVAIL) {
    fi_cq_err_entry error{};
    (void)fi_cq_readerr(cq_, &error, 0);
    fail("fi_cq_read", std::string("an operation failed: ") + fi_strerror(error.err));
  }
  if (read < 0) check_fi("fi_cq_read", read);
  for (long i = 0; i < read; ++i) {
    auto* context = static_cast<raw_context_t*>(entries[i].op_context);
    context->channel->complete_locked(context, entries[i].len);
  }
}

class raw_transport_t final : public transport_t {
 public:
  explicit raw_transport_t(const options_t& options)
      : options_(options), bootstrap_(bootstrap::open_bootstrap()), info_(get_info()) {
    check_fi("fi_fabric", fi_fabric(info_->fabric_attr, &fabric_, nullptr));
    const int endpoints = options.devices == devices_kind_t::dedicated ? options.threads : 1;
    const int partner = (rank_me() + rank_n() / 2) % rank_n();
    for (int e = 0; e < endpoints; ++e) {
      endpoints_.push_back(std::make_unique<raw_endpoint_t>(info_, fabric_, endpoints == 1 &&
                                                                                options.threads > 1));
      const std::vector<char> name = endpoints_.back()->name();
      bootstrap_->put("raw_ep_" + std::to_string(e), name.data(), name.size());
    }
    bootstrap_->fence();
    for (int e = 0; e < endpoints; ++e) {
      endpoints_[e]->insert_peer(bootstrap_->get(partner, "raw_ep_" + std::to_string(e)));
    }
  }
  ~raw_transport_t() override {
    channels_.clear();
    endpoints_.clear();
    fi_close(&fabric_->fid);
    fi_freeinfo(info_);
  }

  int rank_me() const override { return bootstrap_->rank_me(); }
  int rank_n() const override { return bootstrap_->rank_n(); }
  const char* name() const override { return "raw"; }

  channel_t& open_channel(int thread_index) override {
    raw_endpoint_t& endpoint = *endpoints_[endpoints_.size() == 1 ? 0 : thread_index];
    channels_.push_back(std::make_unique<raw_channel_t>(options_, endpoint, thread_index));
    return *channels_.back();
  }

  void barrier() override { bootstrap_->barrier(); }

  std::vector<double> allgather(double value) override {
    return allgather_by_bootstrap(*bootstrap_, "raw_allgather_" + std::to_string(allgathers_++),
                                  value);
  }

 private:
  const options_t options_;
  std::unique_ptr<bootstrap::bootstrap_t> bootstrap_;
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  std::vector<std::unique_ptr<raw_endpoint_t>> endpoints_;
  std::vector<std::unique_ptr<raw_channel_t>> channels_;
  std::uint64_t allgathers_ = 0;  // names each allgather's key
};

}  // namespace

std::unique_ptr<transport_t> make_raw_transport(const options_t& options) {
  return std::make_unique<raw_transport_t>(options);
}

}  // namespace lci::bench
