// ibv_device_t, its life: constructing the device (queues, thread domains,
// QP locks, op pool) and destroying it (draining its sends, freeing the
// verbs objects). The device's other concerns have a file each
// (detail/ibv_device_detail.hpp lists them).
#include "backends/ibv/ibv_device.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <exception>
#include <memory>

#include "backends/ibv/detail/ibv_device_detail.hpp"
#include "lci/util/assert.hpp"

namespace lci::backend::ibv {

using namespace detail;

namespace {

constexpr std::size_t notices_default = 64;
constexpr std::uint32_t inline_default = 64;

// The destructor polls at most this many times for its sends to complete.
constexpr std::size_t drain_turns_max = 50'000'000;

}  // namespace

// ---- construction ----

ibv_device_t::ibv_device_t(ibv_context_t& context, const backend::net_device_attr_t& requested)
    : context_(context),
      verbs_(context.verbs()),
      rank_(context.rank_me()),
      ranks_count_(context.rank_n()),
      peers_(static_cast<std::size_t>(context.rank_n())) {
  const ibv_device_attr& device = context.device_attr();
  sends_max_ = requested.net_max_sends != 0 ? requested.net_max_sends : sends_default;
  sends_max_ = std::min<std::size_t>(sends_max_, static_cast<std::size_t>(device.max_qp_wr));
  recvs_max_ = requested.net_max_recvs != 0 ? requested.net_max_recvs : recvs_default;
  recvs_max_ = std::min<std::size_t>(recvs_max_, static_cast<std::size_t>(device.max_srq_wr));
  notices_max_ = std::min<std::size_t>(notices_default, static_cast<std::size_t>(device.max_srq_wr));
  inline_max_ = requested.inject_size_max != 0
                    ? static_cast<std::uint32_t>(requested.inject_size_max)
                    : inline_default;
  resolve_ibv_attr(requested.ibv);  // before anything is created or exchanged
  try {
    set_up();
  } catch (...) {
    // No destructor runs for a device whose constructor threw: what was
    // created goes here, or its context could never close (an HCA out of
    // SRQs or CQs refuses a device: alloc_device throws, and the program
    // may go on without it).
    destroy_verbs_objects();
    throw;
  }
}

void ibv_device_t::set_up() {
  const ibv_device_attr& device = context_.device_attr();
  assign_qp_locks();
  create_queues();
  connect_peers();
  attr_.max_msg_size = context_.port_attr().max_msg_sz;
  attr_.inject_size_max = inline_max_;
  attr_.supports_put_imm = true;
  attr_.requires_local_mr = true;
  attr_.net_max_sends = sends_max_;
  attr_.net_max_recvs = recvs_max_;
  attr_.net_max_cqes = sends_max_ + recvs_max_;
  // Under implicit ODP a registration creates no MR: no limit.
  attr_.registrations_max =
      implicit_mr_ != nullptr ? 0 : static_cast<std::size_t>(device.max_mr);
  attr_.supports_multi_recv = false;
  attr_.multi_recv_min_free = 0;
  ops_.resize(sends_max_ + recvs_max_ + notices_max_);
  inline_arena_.resize(sends_max_ * inline_max_);
  for (std::size_t i = sends_max_ + recvs_max_; i-- > 0;) {
    op_t& op = ops_[i];
    op.is_recv = i >= sends_max_;
    op_t*& list = op.is_recv ? free_recvs_ : free_sends_;
    op.next = list;
    list = &op;
  }
  for (std::size_t i = sends_max_ + recvs_max_; i < ops_.size(); ++i) {
    op_t& op = ops_[i];
    op.is_recv = true;
    op.is_notice = true;
    op.state = op_state_t::settled;
    if (post_recv_op(&op).is_retry()) throw_verbs(verbs_, "post_srq_recv (notices)", ENOMEM);
  }
}

// The QP try-locks the thread-domain strategy asks for: a QP bound to a
// TD of its own (per_qp) needs only its own serialised; QPs sharing one TD
// (all_qp), or none (the provider locks then, and one lock for all is the
// cheapest for one thread per device), share one.
void ibv_device_t::assign_qp_locks() {
  const std::size_t qps_count = peers_.size() * channels_count;
  if (attr_.ibv.td == backend::net_ibv_td_t::per_qp) {
    qp_locks_ = std::make_unique<padded_lock_t[]>(qps_count);
  }
  std::size_t index = 0;
  for (peer_t& peer : peers_) {
    for (channel_t& channel : peer.channels) {
      channel.lock = qp_locks_ != nullptr ? &qp_locks_[index].lock : &qps_lock_.lock;
      ++index;
    }
  }
  LCI_ASSERT(index == qps_count, "a QP without a lock");
}

void ibv_device_t::create_queues() {
  pd_ = verbs_.alloc_pd(context_.context());
  if (pd_ == nullptr) throw_verbs(verbs_, "alloc_pd", errno);
  if (attr_.ibv.odp == backend::net_ibv_odp_t::implicit_odp) {
    implicit_mr_ = verbs_.reg_mr(pd_, nullptr, SIZE_MAX, access_all | IBV_ACCESS_ON_DEMAND);
    if (implicit_mr_ == nullptr) throw_verbs(verbs_, "reg_mr (implicit on-demand)", errno);
  }
  // Every op produces at most one completion: the CQ cannot overrun.
  cq_ = verbs_.create_cq(context_.context(),
                         static_cast<int>(sends_max_ + recvs_max_ + notices_max_));
  if (cq_ == nullptr) throw_verbs(verbs_, "create_cq", errno);
  ibv_srq_init_attr srq_init{};
  srq_init.attr.max_wr = static_cast<std::uint32_t>(recvs_max_);
  srq_init.attr.max_sge = 1;
  srq_ = verbs_.create_srq(pd_, &srq_init);
  if (srq_ == nullptr) throw_verbs(verbs_, "create_srq", errno);
  srq_init.attr.max_wr = static_cast<std::uint32_t>(notices_max_);
  notice_srq_ = verbs_.create_srq(pd_, &srq_init);
  if (notice_srq_ == nullptr) throw_verbs(verbs_, "create_srq (notices)", errno);
  for (peer_t& peer : peers_) {
    for (std::size_t c = 0; c < channels_count; ++c) {
      channel_t& channel = peer.channels[c];
      ibv_pd* domain = qp_domain();
      for (;;) {  // the largest inline size the device grants, from the requested one down
      ibv_qp_init_attr init{};
      init.send_cq = cq_;
      init.recv_cq = cq_;
      init.srq = c == message_channel ? srq_ : notice_srq_;
      init.qp_type = IBV_QPT_RC;
      init.cap.max_send_wr = static_cast<std::uint32_t>(sends_max_);
      init.cap.max_send_sge = 1;
      init.cap.max_inline_data = inline_max_;
      channel.qp = verbs_.create_qp(domain, &init);
      if (channel.qp != nullptr) {
        inline_max_ = std::min(inline_max_, init.cap.max_inline_data);
        break;
      }
      if (errno != EINVAL || inline_max_ == 0) throw_verbs(verbs_, "create_qp", errno);
      inline_max_ /= 2;
      }
    }
  }
}

// The PD the next QP is created on: the PD itself, or a parent domain
// binding it to a thread domain (attr_.ibv.td): a new one per QP, or the
// device's one. A provider without thread domains gets the PD.
ibv_pd* ibv_device_t::qp_domain() {
  const backend::net_ibv_td_t strategy = attr_.ibv.td;
  if (strategy == backend::net_ibv_td_t::none) return pd_;
  if (strategy == backend::net_ibv_td_t::all_qp && !parent_domains_.empty()) {
    return parent_domains_[0];
  }
  if (tds_unsupported_) return pd_;
  ibv_td_init_attr td_init{};
  ibv_td* td = verbs_.alloc_td(context_.context(), &td_init);
  if (td == nullptr) {
    tds_unsupported_ = errno == EOPNOTSUPP || errno == ENOSYS;
    if (tds_unsupported_) return pd_;
    throw_verbs(verbs_, "alloc_td", errno);
  }
  ibv_parent_domain_init_attr parent_init{};
  parent_init.pd = pd_;
  parent_init.td = td;
  ibv_pd* parent = verbs_.alloc_parent_domain(context_.context(), &parent_init);
  if (parent == nullptr) {
    const int error = errno;
    (void)verbs_.dealloc_td(td);
    tds_unsupported_ = error == EOPNOTSUPP || error == ENOSYS;
    if (tds_unsupported_) return pd_;
    throw_verbs(verbs_, "alloc_parent_domain", error);
  }
  tds_.push_back(td);
  parent_domains_.push_back(parent);
  return parent;
}

// ---- destruction ----

void ibv_device_t::drain() {
  net_status_t statuses[poll_batch_max];
  for (std::size_t turn = 0;; ++turn) {
    bool busy = false;
    for (const peer_t& peer : peers_) {
      for (const channel_t& channel : peer.channels) {
        // relaxed: the device is being destroyed; no other thread uses it.
        busy = busy || channel.outstanding.load(util::mo_relaxed) > 0 ||
               !channel.deferred.empty() || !channel.flushed.empty();
      }
    }
    if (!busy) return;
    // Equivalent mutants: bound. drain_turns_max bounds a wait that a working
    // network ends long before; one turn more before declaring the sends stuck
    // changes only when a hung network is reported (tools/mutate_records/2026-11-28-runs-35-59.md,
    // runs 42-47).
    LCI_ASSERT(turn < drain_turns_max, "an ibv device's sends never completed at destruction");
    (void)poll_locked(statuses, poll_batch_max);  // completions nobody waits for any more
    try {
      context_.bootstrap().wait("ibv device drains its sends");
    } catch (...) {
      return;  // the run is being stopped (a harness's wait throws): nothing more to deliver
    }
  }
}

ibv_device_t::~ibv_device_t() {
  drain();
  // Destroyed while an exception unwinds (a program failing; the simulator
  // ends a crashed rank this way): no goodbye, so that the peers find this
  // device gone as they find a crashed process's.
  if (std::uncaught_exceptions() == 0) {
    say_goodbye();
    drain();  // the goodbyes: acknowledged once the peers' HCAs have them
  }
  destroy_verbs_objects();
}

// Everything created so far, in dependency order (QPs before the SRQs and
// CQ they use, the PD last); also for a constructor that threw halfway.
void ibv_device_t::destroy_verbs_objects() {
  for (peer_t& peer : peers_) {
    for (channel_t& channel : peer.channels) {
      if (channel.qp == nullptr) continue;
      const int error = verbs_.destroy_qp(channel.qp);
      LCI_ASSERT(error == 0, "destroy_qp failed");
    }
  }
  for (op_t& op : ops_) {
    if (op.own_mr != nullptr) (void)dereg_range(op.own_mr);
  }
  if (implicit_mr_ != nullptr) {
    const int error = verbs_.dereg_mr(implicit_mr_);
    LCI_ASSERT(error == 0, "dereg_mr of the implicit on-demand MR failed");
  }
  for (ibv_pd* parent : parent_domains_) {
    const int error = verbs_.dealloc_pd(parent);
    LCI_ASSERT(error == 0, "dealloc_pd of a parent domain failed");
  }
  for (ibv_td* td : tds_) {
    const int error = verbs_.dealloc_td(td);
    LCI_ASSERT(error == 0, "dealloc_td failed");
  }
  if (srq_ != nullptr) {
    const int srq_error = verbs_.destroy_srq(srq_);
    LCI_ASSERT(srq_error == 0, "destroy_srq failed");
  }
  if (notice_srq_ != nullptr) {
    const int notice_srq_error = verbs_.destroy_srq(notice_srq_);
    LCI_ASSERT(notice_srq_error == 0, "destroy_srq (notices) failed");
  }
  if (cq_ != nullptr) {
    const int cq_error = verbs_.destroy_cq(cq_);
    LCI_ASSERT(cq_error == 0, "destroy_cq failed");
  }
  if (pd_ != nullptr) {
    const int pd_error = verbs_.dealloc_pd(pd_);
    LCI_ASSERT(pd_error == 0, "dealloc_pd failed: a registration outlives its device");
  }
}

}  // namespace lci::backend::ibv
