#include "backends/ibv/ibv_device.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "lci/util/assert.hpp"
#include "lci/util/try_lock.hpp"

namespace lci::backends::ibv {

using backend::net_fault_t;
using backend::net_imm_data_t;
using backend::net_mr_t;
using backend::net_opcode_t;
using backend::net_rmr_t;
using backend::net_status_t;

namespace {

constexpr std::size_t notices_default = 64;
constexpr std::uint32_t inline_default = 64;
constexpr int poll_batch_max = 16;
// Async events are read at the first of every async_idle_period polls in a
// row that find nothing, and every async_check_period polls.
constexpr std::size_t async_idle_period = 4;
constexpr std::size_t async_check_period = 256;
// The destructor polls at most this many times for its sends to complete.
constexpr std::size_t drain_turns_max = 50'000'000;
constexpr int access_all =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
// QP timers: RNR NAKs retried forever (7), 12: 0.64 ms between them on
// hardware; transport timeout 14 (67 ms) with 7 retries.
constexpr std::uint8_t rnr_retry_forever = 7;
constexpr std::uint8_t min_rnr_timer = 12;
constexpr std::uint8_t transport_timeout = 14;
constexpr std::uint8_t transport_retry_cnt = 7;
// After a remote access error, how many times a QP is re-established while
// the peer's QP (in ERR until the peer polls) times the requests out, before
// the peer counts as unreachable.
constexpr std::size_t repair_rounds_max = 64;
// Liveness: after this many polls in a row that found nothing, the device
// probes one peer (round robin) with a zero-byte RDMA write on its RMA QP;
// a probe that times out probe_rounds_max times in a row (the QP
// re-established in between) means the peer is gone.
constexpr std::size_t probe_idle_polls = 8;
constexpr std::size_t probe_rounds_max = 8;
// Peers per allgather round: two QP numbers each, 64 bytes per rank.
constexpr std::size_t peers_per_round = ibv_bootstrap_t::allgather_bytes_max / 8;

[[noreturn]] void throw_verbs(const verbs_t& verbs, const char* what, int error) {
  throw std::runtime_error(std::string("ibv backend (") + verbs.get_name() + "): " + what +
                           " failed: " + (error != 0 ? std::strerror(error) : "unknown error"));
}

struct address_t {  // round 0 of the exchange
  std::uint16_t lid;
  std::uint8_t gid[16];
};

net_opcode_t local_opcode(ibv_wr_opcode opcode) {
  switch (opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM: return net_opcode_t::send;
    case IBV_WR_RDMA_READ: return net_opcode_t::read;
    default: return net_opcode_t::write;
  }
}

}  // namespace

struct ibv_device_t::post_args_t {
  ibv_wr_opcode opcode;
  int rank;
  const void* buffer;
  std::size_t size;
  net_mr_t mr;
  std::uint64_t offset;
  net_rmr_t rmr;
  net_imm_data_t imm_data;
  bool silent;
  void* user_context;
};

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

// ---- the ibv attributes ----

void ibv_device_t::resolve_ibv_attr(const backend::net_ibv_attr_t& requested) {
  using backend::net_ibv_odp_t;
  using backend::net_ibv_prefetch_t;
  using backend::net_ibv_td_t;
  if (requested.odp > net_ibv_odp_t::implicit_odp) {
    throw std::invalid_argument("ibv_odp_strategy = " +
                                std::to_string(static_cast<int>(requested.odp)) +
                                ": not an on-demand paging strategy");
  }
  if (requested.prefetch > net_ibv_prefetch_t::prefetch_no_fault) {
    throw std::invalid_argument("ibv_prefetch_strategy = " +
                                std::to_string(static_cast<int>(requested.prefetch)) +
                                ": no advise_mr advice of the verbs table matches it");
  }
  if (requested.td > net_ibv_td_t::per_qp) {
    throw std::invalid_argument("ibv_td_strategy = " +
                                std::to_string(static_cast<int>(requested.td)) +
                                ": not a thread-domain strategy");
  }
  if (requested.prefetch != net_ibv_prefetch_t::none && requested.odp == net_ibv_odp_t::none) {
    throw std::invalid_argument(
        "ibv_prefetch_strategy: prefetches on-demand registrations; it needs "
        "ibv_odp_strategy = explicit_odp or implicit_odp (the default none pins every "
        "registration)");
  }
  attr_.ibv.gid_index = requested.gid_index;
  attr_.ibv.force_gid_auto_select = requested.force_gid_auto_select;
  attr_.ibv.td = requested.td;
  gid_index_ = select_gid_index(requested);
  if (gid_index_ >= 0) {
    ibv_gid_entry entry{};
    const int error = verbs_.query_gid_ex(context_.context(), context_.port_num(),
                                          static_cast<std::uint32_t>(gid_index_), &entry, 0);
    if (error != 0) {
      throw std::invalid_argument("ibv_gid_idx = " + std::to_string(gid_index_) +
                                  ": the port's GID entry cannot be read (" +
                                  std::strerror(error) + ")");
    }
    gid_ = entry.gid;
  }
  resolve_odp(requested);
}

// The GID index of the QPs' address vectors (-1: none, LID routing).
int ibv_device_t::select_gid_index(const backend::net_ibv_attr_t& requested) const {
  const ibv_port_attr& port = context_.port_attr();
  if (requested.gid_index < -1 || requested.gid_index >= port.gid_tbl_len) {
    throw std::invalid_argument("ibv_gid_idx = " + std::to_string(requested.gid_index) +
                                ": the port's GID table has " +
                                std::to_string(port.gid_tbl_len) + " entries (-1: automatic)");
  }
  if (requested.gid_index >= 0) return requested.gid_index;
  const bool ethernet = port.link_layer == IBV_LINK_LAYER_ETHERNET;
  if (!ethernet && !requested.force_gid_auto_select) return -1;
  // The first RoCE v2 GID, IPv4-mapped (::ffff:a.b.c.d) ones first: v2 is
  // routed (UDP/IP), v1 stays in its layer-2 segment. Else index 0.
  int v2_index = -1;
  for (int index = 0; index < port.gid_tbl_len; ++index) {
    ibv_gid_entry entry{};
    if (verbs_.query_gid_ex(context_.context(), context_.port_num(),
                            static_cast<std::uint32_t>(index), &entry, 0) != 0) {
      continue;  // an empty entry
    }
    if (entry.gid_type != IBV_GID_TYPE_ROCE_V2) continue;
    const std::uint8_t* raw = entry.gid.raw;
    const bool ipv4_mapped = std::all_of(raw, raw + 10, [](std::uint8_t b) { return b == 0; }) &&
                             raw[10] == 0xff && raw[11] == 0xff;
    if (ipv4_mapped) return index;
    if (v2_index < 0) v2_index = index;
  }
  return v2_index >= 0 ? v2_index : 0;
}

// On-demand paging where the device reports it (query_device_ex).
void ibv_device_t::resolve_odp(const backend::net_ibv_attr_t& requested) {
  attr_.ibv.odp = backend::net_ibv_odp_t::none;
  attr_.ibv.prefetch = backend::net_ibv_prefetch_t::none;
  if (requested.odp == backend::net_ibv_odp_t::none) return;
  ibv_device_attr_ex device{};
  if (verbs_.query_device_ex(context_.context(), nullptr, &device) != 0) return;  // no ODP
  constexpr std::uint32_t rc_needed = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
                                      IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
                                      IBV_ODP_SUPPORT_SRQ_RECV;
  const ibv_odp_caps& caps = device.odp_caps;
  if ((caps.general_caps & IBV_ODP_SUPPORT) == 0 ||
      (caps.per_transport_caps.rc_odp_caps & rc_needed) != rc_needed) {
    return;  // pinned registrations, as with none
  }
  const bool implicit = requested.odp == backend::net_ibv_odp_t::implicit_odp &&
                        (caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT) != 0;
  attr_.ibv.odp = implicit ? backend::net_ibv_odp_t::implicit_odp
                           : backend::net_ibv_odp_t::explicit_odp;
  attr_.ibv.prefetch = requested.prefetch;
  odp_access_ = IBV_ACCESS_ON_DEMAND;
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

// Round 0: every rank's LID and GID; then rounds of QP numbers: rank r's
// row holds the numbers of its two QPs to each of ranks [k * 8, k * 8 + 8).
void ibv_device_t::connect_peers() {
  const auto ranks = static_cast<std::size_t>(ranks_count_);
  const auto me = static_cast<std::size_t>(rank_);
  address_t mine{};
  mine.lid = context_.port_attr().lid;
  std::memcpy(mine.gid, gid_.raw, sizeof(mine.gid));
  std::vector<address_t> addresses(ranks);
  context_.bootstrap().allgather(&mine, sizeof(mine), addresses.data());
  constexpr std::size_t row_size = peers_per_round * channels_count;
  for (std::size_t first = 0; first < ranks; first += peers_per_round) {
    std::uint32_t row[row_size] = {};
    const std::size_t count = std::min(peers_per_round, ranks - first);
    for (std::size_t i = 0; i < count; ++i) {
      for (std::size_t c = 0; c < channels_count; ++c) {
        row[i * channels_count + c] = peers_[first + i].channels[c].qp->qp_num;
      }
    }
    std::vector<std::uint32_t> rows(ranks * row_size);
    context_.bootstrap().allgather(row, sizeof(row), rows.data());
    if (me < first || me >= first + count) continue;  // this rank's column is in another round
    // Checked indexing: this runs once per device, and a column or channel
    // off its row is a bug to stop at, not a QP number to connect to.
    for (std::size_t peer = 0; peer < ranks; ++peer) {
      for (std::size_t c = 0; c < channels_count; ++c) {
        peers_[peer].channels.at(c).remote_qp_num =
            rows.at(peer * row_size + (me - first) * channels_count + c);
      }
    }
  }
  for (std::size_t peer = 0; peer < ranks; ++peer) {
    peers_[peer].remote_lid = addresses[peer].lid;
    std::memcpy(peers_[peer].remote_gid.raw, addresses[peer].gid, sizeof(addresses[peer].gid));
    for (channel_t& channel : peers_[peer].channels) {
      if (int error = bring_up_to_rtr(peers_[peer], channel)) {
        throw_verbs(verbs_, "modify_qp", error);
      }
      qp_nums_.emplace_back(channel.qp->qp_num, static_cast<int>(peer));
    }
  }
  std::sort(qp_nums_.begin(), qp_nums_.end());
  // No rank sends before every rank's QPs can receive (RTR): a request to
  // a QP still in RESET or INIT is lost, and the sender's retries would
  // count down against however long the peer takes to get there.
  char ready = 1;
  std::vector<char> all_ready(ranks);
  context_.bootstrap().allgather(&ready, sizeof(ready), all_ready.data());
  for (peer_t& peer : peers_) {
    for (channel_t& channel : peer.channels) {
      if (int error = rtr_to_rts(channel)) throw_verbs(verbs_, "modify_qp", error);
    }
  }
}

// RESET -> INIT -> RTR -> RTS, to the peer's QP.
int ibv_device_t::bring_up(const peer_t& peer, channel_t& channel) {
  if (int error = bring_up_to_rtr(peer, channel)) return error;
  return rtr_to_rts(channel);
}

// RESET -> INIT -> RTR: the QP can receive from the peer's.
int ibv_device_t::bring_up_to_rtr(const peer_t& peer, channel_t& channel) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RESET;
  if (int error = verbs_.modify_qp(channel.qp, &attr, IBV_QP_STATE)) return error;
  attr = ibv_qp_attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = context_.port_num();
  attr.qp_access_flags = access_all;
  if (int error = verbs_.modify_qp(
          channel.qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
    return error;
  }
  attr = ibv_qp_attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = context_.port_attr().active_mtu;
  attr.dest_qp_num = channel.remote_qp_num;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = min_rnr_timer;
  attr.ah_attr.dlid = peer.remote_lid;
  attr.ah_attr.port_num = context_.port_num();
  if (gid_index_ >= 0) {
    // A GRH: RoCE routes by GID, not by LID (and InfiniBand may, across
    // subnets). hop_limit: RoCE v2 crosses IP routers.
    attr.ah_attr.is_global = 1;
    attr.ah_attr.grh.dgid = peer.remote_gid;
    attr.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(gid_index_);
    attr.ah_attr.grh.hop_limit = 64;
  }
  if (int error = verbs_.modify_qp(channel.qp, &attr,
                                   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                       IBV_QP_MIN_RNR_TIMER)) {
    return error;
  }
  return 0;
}

// RTR -> RTS: the QP can send.
int ibv_device_t::rtr_to_rts(channel_t& channel) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = transport_timeout;
  attr.retry_cnt = transport_retry_cnt;
  attr.rnr_retry = rnr_retry_forever;
  attr.max_rd_atomic = 1;
  return verbs_.modify_qp(channel.qp, &attr,
                          IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                              IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
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
    // changes only when a hung network is reported (docs/verification.md, runs
    // 42-47).
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

// Tells every peer still there that this device closes while its process
// goes on: without it, a peer that probes this device later finds the QPs
// gone and reports this rank crashed. A zero-byte send on the peer's RMA QP,
// whose SRQ holds only the device's own notices: a send lands there for no
// other reason (take_recv_wc). After drain(): the send queues have room
// and every op is back. A peer that is gone makes the goodbye fail, which
// is not reported (take_send_error).
void ibv_device_t::say_goodbye() {
  for (std::size_t rank = 0; rank < peers_.size(); ++rank) {
    peer_t& peer = peers_[rank];
    if (static_cast<int>(rank) == rank_ || is_dead(peer) || peer.closed) continue;
    op_t* op = nullptr;
    {
      util::spinlock_guard_t pool(send_pool_lock_.lock);
      op = alloc_op(false);
    }
    LCI_ASSERT(op != nullptr, "no send op free after the drain");
    op->state = op_state_t::settled;
    op->opcode = IBV_WR_SEND;
    op->rank = static_cast<int>(rank);
    op->silent = true;
    op->is_goodbye = true;
    channel_t& channel = channel_of(op);
    util::spinlock_guard_t guard(*channel.lock);
    if (post_wr(channel, op) != 0) release_op(op);  // a QP in error: the peer learns it anyway
  }
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

// ---- ops ----

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

error_t ibv_device_t::fill_op(op_t* op, const post_args_t& args) {
  op->opcode = args.opcode;
  op->silent = args.silent;
  op->rank = args.rank;
  op->user_context = args.user_context;
  op->buffer = const_cast<void*>(args.buffer);
  op->length = args.size;
  op->imm_data = args.imm_data;
  op->remote_address = args.rmr.base + args.offset;
  op->rkey = static_cast<std::uint32_t>(args.rmr.rkey);
  op->is_inline = args.opcode != IBV_WR_RDMA_READ && args.size <= inline_max_ &&
                  (args.silent || args.mr.is_empty());
  if (op->is_inline) {  // kept in the device: it may be posted again after a repair
    const auto index = static_cast<std::size_t>(op - ops_.data());
    unsigned char* slot = inline_arena_.data() + index * inline_max_;
    if (args.size > 0) std::memcpy(slot, args.buffer, args.size);
    op->buffer = slot;
    return errorcode_t::done;
  }
  if (!args.mr.is_empty()) {
    op->lkey = static_cast<ibv_mr*>(args.mr.opaque)->lkey;
    return errorcode_t::done;
  }
  if (args.size == 0) return errorcode_t::done;
  op->own_mr = reg_range(op->buffer, args.size, IBV_ACCESS_LOCAL_WRITE);
  if (op->own_mr == nullptr) return errorcode_t::retry_nomem;
  op->lkey = op->own_mr->lkey;
  return errorcode_t::done;
}

ibv_device_t::channel_t& ibv_device_t::channel_of(const op_t* op) {
  peer_t& peer = peers_[static_cast<std::size_t>(op->rank)];
  const bool is_send = op->opcode == IBV_WR_SEND || op->opcode == IBV_WR_SEND_WITH_IMM;
  return peer.channels[is_send && !op->is_goodbye ? message_channel : rma_channel];
}

int ibv_device_t::post_wr(channel_t& channel, op_t* op) {
  ibv_sge sge{reinterpret_cast<std::uint64_t>(op->buffer), static_cast<std::uint32_t>(op->length),
              op->lkey};
  ibv_send_wr wr{};
  wr.wr_id = static_cast<std::uint64_t>(op - ops_.data());
  wr.sg_list = &sge;
  wr.num_sge = op->length > 0 ? 1 : 0;
  wr.opcode = op->opcode;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (op->is_inline) wr.send_flags |= IBV_SEND_INLINE;
  wr.imm_data = op->imm_data;
  wr.wr.rdma.remote_addr = op->remote_address;
  wr.wr.rdma.rkey = op->rkey;
  // Counted and marked posted before post_send: another thread may poll
  // its completion the moment post_send returns.
  const op_state_t before = op->state;
  op->state = op_state_t::posted;
  // relaxed: posters add only under channel.lock (held); the poller
  // subtracts only after polling this WR's completion, which the verbs
  // order after post_send.
  channel.outstanding.fetch_add(1, util::mo_relaxed);
  ibv_send_wr* bad = nullptr;
  const int error = verbs_.post_send(channel.qp, &wr, &bad);
  if (error != 0) {
    op->state = before;
    channel.outstanding.fetch_sub(1, util::mo_relaxed);  // relaxed: as above
  }
  return error;
}

error_t ibv_device_t::post_op(const char* what, const post_args_t& args) {
  const std::size_t size_max = args.silent ? inline_max_ : attr_.max_msg_size;
  backend::check_post_target(what, args.rank, ranks_count_, args.buffer, args.size, size_max);
  peer_t& peer = peers_[static_cast<std::size_t>(args.rank)];
  const bool is_send = args.opcode == IBV_WR_SEND || args.opcode == IBV_WR_SEND_WITH_IMM;
  channel_t& channel = peer.channels[is_send ? message_channel : rma_channel];
  util::try_lock_guard_t guard(*channel.lock);
  if (!guard.owns_lock()) return errorcode_t::retry_lock;
  // relaxed: under the lock only the poller changes it, and only down, so
  // room seen now stays.
  if (channel.outstanding.load(util::mo_relaxed) >= sends_max_) return errorcode_t::retry_nomem;
  op_t* op = nullptr;
  {
    util::try_lock_guard_t pool(send_pool_lock_.lock);
    if (!pool.owns_lock()) return errorcode_t::retry_lock;
    op = alloc_op(false);
  }
  if (op == nullptr) return errorcode_t::retry_nomem;
  op->state = op_state_t::settled;  // owned by this call until posted
  op->opcode = args.opcode;
  op->rank = args.rank;
  LCI_ASSERT(&channel_of(op) == &channel, "an op on another QP than its channel's");
  const error_t filled = fill_op(op, args);
  if (filled.is_retry()) {
    release_op(op);
    return filled;
  }
  const error_t accepted = args.silent ? errorcode_t::done : errorcode_t::posted;
  // acquire: pairs with the release in mark_dead() [D]; a peer found dead
  // later fails what this posts through the verbs.
  // Equivalent mutants: mo_weaken. Stronger than needed: a post that finds the
  // peer dead reads nothing the poller wrote before marking it; it settles its
  // own op, which reaches the poller through settled_by_posts_, whose push and
  // take_all order it [I] (docs/verification.md, runs 42-48).
  if (peer.dead.load(util::mo_acquire)) {  // fails as every operation to that rank does
    op->fault = net_fault_t::peer_crashed;
    settled_by_posts_.push(op);
    return accepted;
  }
  // relaxed: a stale false posts to a QP in ERR, which flushes the WR and
  // the poller posts it again after the repair, as it does with WRs that
  // were in flight; the repair itself (which clears it) takes this lock.
  if (channel.needs_repair.load(util::mo_relaxed)) {  // posted once the QP is back
    op->state = op_state_t::deferred;
    channel.deferred.push(op);
    channel.deferred_waiting.store(true, util::mo_relaxed);  // relaxed: a hint (repair_peers())
    return accepted;
  }
  const int error = post_wr(channel, op);
  if (error == ENOMEM) {
    release_op(op);
    return errorcode_t::retry_nomem;
  }
  if (error != 0) throw_verbs(verbs_, what, error);
  return accepted;
}

// ---- posts ----

error_t ibv_device_t::post_recv_op(op_t* op) {
  ibv_sge sge{reinterpret_cast<std::uint64_t>(op->buffer), static_cast<std::uint32_t>(op->length),
              op->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = static_cast<std::uint64_t>(op - ops_.data());
  wr.sg_list = &sge;
  wr.num_sge = op->length > 0 ? 1 : 0;
  // Marked posted before: another thread may poll its completion the
  // moment post_srq_recv returns.
  const op_state_t before = op->state;
  op->state = op_state_t::posted;
  ibv_recv_wr* bad = nullptr;
  const int error = verbs_.post_srq_recv(op->is_notice ? notice_srq_ : srq_, &wr, &bad);
  if (error != 0) op->state = before;
  if (error == ENOMEM) return errorcode_t::retry_nomem;
  if (error != 0) throw_verbs(verbs_, "post_srq_recv", error);
  return errorcode_t::done;
}

error_t ibv_device_t::post_recv(void* buffer, std::size_t size, net_mr_t mr, void* user_context) {
  if (buffer == nullptr && size > 0) throw std::invalid_argument("post_recv: buffer is null");
  util::try_lock_guard_t guard(srq_lock_.lock);
  if (!guard.owns_lock()) return errorcode_t::retry_lock;
  op_t* op = alloc_op(true);
  if (op == nullptr) return errorcode_t::retry_nomem;
  op->state = op_state_t::settled;
  op->buffer = buffer;
  op->length = size;
  op->user_context = user_context;
  if (!mr.is_empty()) {
    op->lkey = static_cast<ibv_mr*>(mr.opaque)->lkey;
  } else if (size > 0) {
    op->own_mr = reg_range(buffer, size, IBV_ACCESS_LOCAL_WRITE);
    if (op->own_mr == nullptr) {
      release_op(op);
      return errorcode_t::retry_nomem;
    }
    op->lkey = op->own_mr->lkey;
  }
  const error_t error = post_recv_op(op);
  if (error.is_retry()) release_op(op);
  return error;
}

error_t ibv_device_t::post_recv_multi(void*, std::size_t, void*) {
  throw std::logic_error("post_recv_multi: the ibv backend offers no multi-receive buffers");
}

error_t ibv_device_t::post_sends(int rank, const void* buffer, std::size_t size,
                                 net_imm_data_t imm_data) {
  return post_op("post_sends", {IBV_WR_SEND_WITH_IMM, rank, buffer, size, net_mr_t{}, 0,
                                net_rmr_t{}, imm_data, true, nullptr});
}

error_t ibv_device_t::post_send(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                                net_imm_data_t imm_data, void* user_context) {
  return post_op("post_send", {IBV_WR_SEND_WITH_IMM, rank, buffer, size, mr, 0, net_rmr_t{},
                               imm_data, false, user_context});
}

error_t ibv_device_t::post_puts(int rank, const void* buffer, std::size_t size,
                                std::uint64_t offset, net_rmr_t rmr) {
  return post_op("post_puts", {IBV_WR_RDMA_WRITE, rank, buffer, size, net_mr_t{}, offset, rmr, 0,
                               true, nullptr});
}

error_t ibv_device_t::post_put(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                               std::uint64_t offset, net_rmr_t rmr, void* user_context) {
  return post_op("post_put", {IBV_WR_RDMA_WRITE, rank, buffer, size, mr, offset, rmr, 0, false,
                              user_context});
}

error_t ibv_device_t::post_putImms(int rank, const void* buffer, std::size_t size,
                                   std::uint64_t offset, net_rmr_t rmr, net_imm_data_t imm_data) {
  return post_op("post_putImms", {IBV_WR_RDMA_WRITE_WITH_IMM, rank, buffer, size, net_mr_t{},
                                  offset, rmr, imm_data, true, nullptr});
}

error_t ibv_device_t::post_putImm(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                                  std::uint64_t offset, net_rmr_t rmr, net_imm_data_t imm_data,
                                  void* user_context) {
  return post_op("post_putImm", {IBV_WR_RDMA_WRITE_WITH_IMM, rank, buffer, size, mr, offset, rmr,
                                 imm_data, false, user_context});
}

error_t ibv_device_t::post_get(int rank, void* buffer, std::size_t size, net_mr_t mr,
                               std::uint64_t offset, net_rmr_t rmr, void* user_context) {
  return post_op("post_get", {IBV_WR_RDMA_READ, rank, buffer, size, mr, offset, rmr, 0, false,
                              user_context});
}

// ---- completions ----

int ibv_device_t::rank_of_qp_num(std::uint32_t qp_num) const {
  const auto it = std::lower_bound(qp_nums_.begin(), qp_nums_.end(),
                                   std::pair<std::uint32_t, int>{qp_num, -1});
  LCI_ASSERT(it != qp_nums_.end() && it->first == qp_num, "a completion of a foreign QP");
  return it->second;
}

std::size_t ibv_device_t::drain_settled(net_status_t* statuses, std::size_t statuses_max) {
  std::size_t count = 0;
  while (count < statuses_max && dead_to_report_ > 0) {
    // Equivalent mutants: bound. While dead_to_report_ > 0 some peer is dead
    // and not yet reported, so the loop breaks at that peer before rank reaches
    // peers_.size() (docs/verification.md, runs 42-47).
    for (std::size_t rank = 0; rank < peers_.size(); ++rank) {
      peer_t& peer = peers_[rank];
      if (!is_dead(peer) || peer.dead_reported) continue;
      peer.dead_reported = true;
      --dead_to_report_;
      statuses[count++] = backend::peer_down_status(static_cast<int>(rank));
      break;
    }
  }
  while (count < statuses_max && !settled_.empty()) {
    op_t* op = settled_.pop();
    net_status_t& status = statuses[count++];
    status = net_status_t{};
    status.opcode = local_opcode(op->opcode);
    status.fault = op->fault;
    status.rank = op->rank;
    status.user_context = op->silent ? nullptr : op->user_context;
    status.length = op->length;
    if (op->fault == net_fault_t::protection) status.fault_address = op->remote_address;
    release_op(op);
  }
  return count;
}

// The poller's. What waits in the channels' deferred lists (under their
// locks) is settled by repair_peers(), lock permitting.
void ibv_device_t::mark_dead(int rank) {
  peer_t& peer = peers_[static_cast<std::size_t>(rank)];
  if (is_dead(peer)) return;
  // release: pairs with the acquire in post_op() [D].
  // Equivalent mutants: mo_weaken. Stronger than needed, as that acquire is:
  // a post that reads true uses nothing written before this store
  // (docs/verification.md, runs 42-48).
  peer.dead.store(true, util::mo_release);
  ++dead_to_report_;
  for (channel_t& channel : peer.channels) {
    while (op_t* op = channel.flushed.pop()) {
      op->state = op_state_t::settled;
      op->fault = net_fault_t::peer_crashed;
      settled_.push(op);
    }
  }
}

// The caller holds channel.lock.
void ibv_device_t::settle_deferred_of_dead(peer_t& peer, channel_t& channel) {
  LCI_ASSERT(is_dead(peer), "settling the posts of a live peer");
  while (op_t* op = channel.deferred.pop()) {
    op->state = op_state_t::settled;
    op->fault = net_fault_t::peer_crashed;
    settled_.push(op);
  }
  channel.deferred_waiting.store(false, util::mo_relaxed);  // relaxed: a hint
}

// A failed send-side WR: whether it makes a completion (into *status).
bool ibv_device_t::take_send_error(const ibv_wc& wc, op_t* op, net_status_t* status) {
  peer_t& peer = peers_[static_cast<std::size_t>(op->rank)];
  channel_t& channel = channel_of(op);
  if (op->is_goodbye) {  // never reported: the device is closing
    release_op(op);
    return false;
  }
  if (op->is_probe) {  // never reported: it finds out whether the peer is there
    if (peer.closed) {  // posted before its goodbye came: its QPs are gone, not it
      release_op(op);
      return false;
    }
    if (wc.status == IBV_WC_RETRY_EXC_ERR && !is_dead(peer)) {
      // Equivalent mutants: bound. probe_rounds_max tunes how many timed-out
      // probes in a row a silent peer is given; one round more declares the same
      // peer dead one probe timeout later, and a peer that answers resets the
      // count either way. It bounds nothing else (docs/verification.md, runs 42-47).
      if (channel.repair_rounds < probe_rounds_max) {
        ++channel.repair_rounds;
        channel.needs_repair.store(true, util::mo_relaxed);  // relaxed: see post_op()
      } else {
        mark_dead(op->rank);
      }
    } else if (!is_dead(peer)) {
      channel.needs_repair.store(true, util::mo_relaxed);  // flushed behind another failure
    }
    release_op(op);
    return false;
  }
  // Equivalent mutants: bound. repair_rounds_max tunes how many times a send
  // that timed out while its QP recovers is posted again before the peer
  // counts as unreachable; one round more reports the same fault one timeout
  // later. It bounds nothing else (docs/verification.md, runs 42-47).
  const bool not_yet = wc.status == IBV_WC_RETRY_EXC_ERR && channel.recovering &&
                       channel.repair_rounds < repair_rounds_max;
  if ((wc.status == IBV_WC_WR_FLUSH_ERR || not_yet) && !is_dead(peer)) {  // post it again later
    if (not_yet) ++channel.repair_rounds;
    channel.needs_repair.store(true, util::mo_relaxed);  // relaxed: see post_op()
    op->state = op_state_t::deferred;
    channel.flushed.push(op);
    return false;
  }
  *status = net_status_t{};
  status->opcode = local_opcode(op->opcode);
  status->rank = op->rank;
  status->user_context = op->silent ? nullptr : op->user_context;
  status->length = op->length;
  const bool refused = wc.status == IBV_WC_REM_ACCESS_ERR || wc.status == IBV_WC_REM_INV_REQ_ERR;
  if (refused && op->opcode != IBV_WR_SEND_WITH_IMM && !is_dead(peer)) {
    status->fault = net_fault_t::protection;
    status->fault_address = op->remote_address;
    channel.needs_repair.store(true, util::mo_relaxed);  // relaxed: see post_op()
    channel.recovering = true;
    channel.repair_rounds = 0;
  } else {
    status->fault = net_fault_t::peer_crashed;
    mark_dead(op->rank);
  }
  release_op(op);
  return true;
}

bool ibv_device_t::take_recv_wc(const ibv_wc& wc, op_t* op, net_status_t* status) {
  if (wc.status != IBV_WC_SUCCESS) {  // a message over the buffer: the sender hears of it
    op->state = op_state_t::deferred;
    recvs_to_repost_.push(op);
    return false;
  }
  if (op->is_notice && wc.opcode == IBV_WC_RECV) {  // a peer's goodbye (say_goodbye)
    peers_[static_cast<std::size_t>(rank_of_qp_num(wc.qp_num))].closed = true;
    op->state = op_state_t::deferred;
    recvs_to_repost_.push(op);
    return false;
  }
  *status = net_status_t{};
  status->rank = rank_of_qp_num(wc.qp_num);
  status->length = wc.byte_len;
  status->imm_data = (wc.wc_flags & IBV_WC_WITH_IMM) != 0 ? wc.imm_data : 0;
  if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
    // The write took a receive, but its buffer is untouched: post it again.
    status->opcode = net_opcode_t::remote_write;
    op->state = op_state_t::deferred;
    recvs_to_repost_.push(op);
    return true;
  }
  status->opcode = net_opcode_t::recv;
  status->buffer = op->buffer;
  status->user_context = op->user_context;
  release_op(op);
  return true;
}

bool ibv_device_t::take_wc(const ibv_wc& wc, net_status_t* status) {
  LCI_ASSERT(wc.wr_id < ops_.size(), "a completion with a foreign wr_id");
  op_t* op = &ops_[wc.wr_id];
  LCI_ASSERT(op->state == op_state_t::posted, "a completion of an op not posted");
  if (op->is_recv) return take_recv_wc(wc, op, status);
  channel_t& channel = channel_of(op);
  // relaxed: see post_wr().
  const std::size_t outstanding = channel.outstanding.fetch_sub(1, util::mo_relaxed);
  LCI_ASSERT(outstanding > 0, "a send completion with none outstanding");
  if (wc.status != IBV_WC_SUCCESS) return take_send_error(wc, op, status);
  channel.recovering = false;  // the peer's QP answers again
  channel.repair_rounds = 0;
  const bool report = !op->silent;
  if (report) {
    *status = net_status_t{};
    status->opcode = local_opcode(op->opcode);
    status->rank = op->rank;
    status->user_context = op->user_context;
    status->length = op->length;
  }
  release_op(op);
  return report;
}

// The responder's side of a remote access error: its QP entered ERR with no
// completion to say so; the async event does.
void ibv_device_t::check_async_events() {
  ibv_async_event event{};
  while (verbs_.poll_async_event(context_.context(), &event) == 0) {
    if (event.event_type != IBV_EVENT_QP_ACCESS_ERR && event.event_type != IBV_EVENT_QP_REQ_ERR &&
        event.event_type != IBV_EVENT_QP_FATAL) {
      continue;
    }
    for (peer_t& peer : peers_) {
      for (channel_t& channel : peer.channels) {
        if (channel.qp == event.element.qp && !is_dead(peer)) {
          channel.needs_repair.store(true, util::mo_relaxed);  // relaxed: see post_op()
        }
      }
    }
  }
}

// A zero-byte RDMA write (it checks no key) to the next peer whose RMA QP is
// idle: it completes if the peer's QP is there, and times out if the peer
// is gone (a crashed process's QPs are destroyed with it).
// False: the probe was refused (no op or a full send queue); try again.
bool ibv_device_t::probe_next_peer() {
  // Equivalent mutants: bound. One try more wraps around to the rank the call
  // started at, which the round robin probes next anyway; the probe it may
  // post there is the next call's (docs/verification.md, runs 42-47).
  for (std::size_t tries = 0; tries < peers_.size(); ++tries) {
    const std::size_t rank = probe_next_rank_;
    probe_next_rank_ = (probe_next_rank_ + 1) % peers_.size();
    peer_t& peer = peers_[rank];
    channel_t& channel = peer.channels[rma_channel];
    if (static_cast<int>(rank) == rank_ || is_dead(peer) || peer.closed) continue;
    util::try_lock_guard_t guard(*channel.lock);
    if (!guard.owns_lock()) continue;  // a poster is using it: not idle
    // relaxed: under the lock only the poller (this thread) changes them.
    if (channel.needs_repair.load(util::mo_relaxed) ||
        channel.outstanding.load(util::mo_relaxed) > 0 ||
        channel.deferred_waiting.load(util::mo_relaxed)) {
      continue;
    }
    op_t* op = nullptr;
    {
      util::try_lock_guard_t pool(send_pool_lock_.lock);
      if (pool.owns_lock()) op = alloc_op(false);
    }
    if (op == nullptr) return false;
    op->state = op_state_t::settled;
    op->opcode = IBV_WR_RDMA_WRITE;
    op->rank = static_cast<int>(rank);
    op->silent = true;
    op->is_probe = true;
    if (post_wr(channel, op) != 0) {
      release_op(op);
      return false;
    }
    return true;
  }
  return true;  // nobody to probe now
}

// Posts what waited for the channel's QP (re-established), as far as the
// send queue has room. The caller holds channel.lock.
void ibv_device_t::post_deferred(channel_t& channel) {
  // relaxed: under the lock only the poller changes outstanding, and only down.
  while (!channel.deferred.empty() && channel.outstanding.load(util::mo_relaxed) < sends_max_) {
    op_t* op = channel.deferred.pop();
    const int error = post_wr(channel, op);
    if (error == ENOMEM) {  // the send queue is full after all: at the next poll
      channel.deferred.push_front(op);
      break;
    }
    if (error != 0) throw_verbs(verbs_, "post_send (after re-establishing)", error);
  }
  channel.deferred_waiting.store(!channel.deferred.empty(), util::mo_relaxed);  // relaxed: a hint
}

// Under channel.lock: re-establishes the QP if it is in ERR and all its
// WRs came back, and posts what waited for it (the flushed WRs first).
void ibv_device_t::repair_channel(peer_t& peer, channel_t& channel) {
  channel.deferred.push_front(&channel.flushed);
  // relaxed: the poller (this thread) is the only writer of needs_repair;
  // posters change outstanding only under the lock, held.
  if (channel.needs_repair.load(util::mo_relaxed)) {
    if (channel.outstanding.load(util::mo_relaxed) > 0) {
      // relaxed: a hint
      channel.deferred_waiting.store(!channel.deferred.empty(), util::mo_relaxed);
      return;
    }
    if (int error = bring_up(peer, channel)) {
      throw_verbs(verbs_, "modify_qp (re-establishing)", error);
    }
    channel.needs_repair.store(false, util::mo_relaxed);  // relaxed: read under this lock
  }
  post_deferred(channel);
}

// Every channel with repair work or waiting posts, whose lock is free now
// (a busy one waits for the next poll), and the receives to post again.
void ibv_device_t::repair_peers() {
  for (peer_t& peer : peers_) {
    for (channel_t& channel : peer.channels) {
      // relaxed: needs_repair is the poller's own; deferred_waiting a hint
      // (a post that sets it is seen at a later poll).
      const bool work = channel.needs_repair.load(util::mo_relaxed) || !channel.flushed.empty() ||
                        channel.deferred_waiting.load(util::mo_relaxed);
      if (!work) continue;
      util::try_lock_guard_t guard(*channel.lock);
      if (!guard.owns_lock()) continue;
      if (is_dead(peer)) {
        settle_deferred_of_dead(peer, channel);
      } else {
        repair_channel(peer, channel);
      }
    }
  }
  repost_recvs();
}

// Receives whose completion took no buffer (a write with immediate on a
// notice) or failed: posted again, the caller's under the SRQ lock if it
// is free, the notices (only the poller posts them) at once.
void ibv_device_t::repost_recvs() {
  if (recvs_to_repost_.empty()) return;
  util::try_lock_guard_t srq_guard(srq_lock_.lock);
  op_list_t waiting;
  while (op_t* op = recvs_to_repost_.pop()) {  // bounded: at most ops_.size() receives
    if ((!op->is_notice && !srq_guard.owns_lock()) || post_recv_op(op).is_retry()) {
      waiting.push(op);
    }
  }
  recvs_to_repost_ = waiting;
}

// A poll that finds nothing ends with the bootstrap's wait hook, outside
// the device's locks: a scheduling point under the simulator (a rank that
// spins on progress lets the others run, as over the simulated network),
// an empty call in a real process.
std::size_t ibv_device_t::poll_comp(net_status_t* statuses, std::size_t statuses_max) {
  const std::size_t count = poll_locked(statuses, statuses_max);
  if (count == 0) context_.bootstrap().wait("ibv poll_comp found nothing");
  return count;
}

std::size_t ibv_device_t::poll_locked(net_status_t* statuses, std::size_t statuses_max) {
  util::try_lock_guard_t guard(cq_lock_.lock);
  if (!guard.owns_lock()) return 0;
  op_list_t posted_to_dead = settled_by_posts_.take_all();
  while (op_t* op = posted_to_dead.pop()) settled_.push(op);
  std::size_t count = drain_settled(statuses, statuses_max);
  int polled = 0;
  // Equivalent mutants: bound. At count == statuses_max the CQ is asked for
  // no entries, and poll_cq reads none (docs/verification.md, runs 42-47).
  if (count < statuses_max) {
    ibv_wc wcs[poll_batch_max];
    const int wanted = static_cast<int>(std::min<std::size_t>(statuses_max - count, poll_batch_max));
    polled = verbs_.poll_cq(cq_, wanted, wcs);
    if (polled < 0) throw_verbs(verbs_, "poll_cq (the CQ is broken)", -polled);
    for (int i = 0; i < polled; ++i) {
      if (take_wc(wcs[i], &statuses[count])) ++count;
    }
  }
  idle_polls_ = count == 0 && polled == 0 ? idle_polls_ + 1 : 0;
  // Reading async events is a system call with libibverbs: not on every poll.
  if (idle_polls_ % async_idle_period == 1 || ++polls_count_ % async_check_period == 0) {
    check_async_events();
  }
  repair_peers();
  // A probe the send queue refused is tried again at the next idle poll.
  if (idle_polls_ >= probe_idle_polls && probe_next_peer()) idle_polls_ = 0;
  return count;
}

// ---- registration ----

// [address, address + size) registered with `access` (and on demand under
// explicit ODP), or under implicit ODP the implicit MR, which covers it
// already. nullptr (errno set) when reg_mr refuses.
ibv_mr* ibv_device_t::reg_range(void* address, std::size_t size, int access) {
  if (implicit_mr_ != nullptr) return implicit_mr_;
  return verbs_.reg_mr(pd_, address, size, access | odp_access_);
}

int ibv_device_t::dereg_range(ibv_mr* mr) {
  LCI_ASSERT(mr != nullptr, "deregistering no MR");
  if (mr == implicit_mr_) return 0;  // the device's, until it is destroyed
  return verbs_.dereg_mr(mr);
}

// The prefetch strategy's advice over the range of an on-demand MR,
// synchronous (FLUSH) and in pieces an SGE can carry. Advice only: a range
// it did not fault in is faulted in by the first access.
void ibv_device_t::prefetch(ibv_mr* mr, void* address, std::size_t size) {
  using backend::net_ibv_prefetch_t;
  if (attr_.ibv.prefetch == net_ibv_prefetch_t::none) return;
  LCI_ASSERT(attr_.ibv.odp != backend::net_ibv_odp_t::none, "a prefetch without ODP");
  const ibv_advise_mr_advice advice =
      attr_.ibv.prefetch == net_ibv_prefetch_t::prefetch_write ? IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE
      : attr_.ibv.prefetch == net_ibv_prefetch_t::prefetch_no_fault
          ? IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT
          : IBV_ADVISE_MR_ADVICE_PREFETCH;
  constexpr std::size_t piece_bytes_max = std::size_t{1} << 30;
  auto* next = static_cast<unsigned char*>(address);
  for (std::size_t left = size; left > 0;) {  // bounded: size / piece_bytes_max turns
    const std::size_t piece = std::min(left, piece_bytes_max);
    ibv_sge sge{reinterpret_cast<std::uint64_t>(next), static_cast<std::uint32_t>(piece),
                mr->lkey};
    if (verbs_.advise_mr(pd_, advice, IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1) != 0) return;
    next += piece;
    left -= piece;
  }
}

error_t ibv_device_t::register_memory(void* address, std::size_t size, net_mr_t* mr) {
  *mr = net_mr_t{};
  ibv_mr* registered = reg_range(address, size, access_all);
  if (registered == nullptr) {
    if (errno == ENOMEM || errno == EAGAIN) return errorcode_t::retry_nomem;
    throw_verbs(verbs_, "reg_mr", errno);
  }
  prefetch(registered, address, size);
  mr->base = address;
  mr->size = size;
  mr->opaque = registered;
  return errorcode_t::done;
}

void ibv_device_t::deregister_memory(net_mr_t* mr) {
  if (mr->is_empty()) return;
  if (int error = dereg_range(static_cast<ibv_mr*>(mr->opaque))) {
    throw_verbs(verbs_, "dereg_mr", error);
  }
  *mr = net_mr_t{};
}

net_rmr_t ibv_device_t::get_rmr(net_mr_t mr) const {
  if (mr.is_empty()) throw std::invalid_argument("get_rmr: the mr is empty");
  net_rmr_t rmr;
  rmr.base = reinterpret_cast<std::uintptr_t>(mr.base);
  rmr.rkey = static_cast<ibv_mr*>(mr.opaque)->rkey;
  rmr.size = mr.size;
  return rmr;
}

}  // namespace lci::backends::ibv
