// ibv_device_t: connecting — exchanging LIDs, GIDs and QP numbers through
// the bootstrap, and the QP state transitions (RESET -> INIT -> RTR ->
// RTS) that connect a QP at creation and re-establish it after an error.
#include "backends/ibv/ibv_device.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/ibv/detail/ibv_device_detail.hpp"

namespace lci::backend::ibv {

using namespace detail;

namespace {

// QP timers: RNR NAKs retried forever (7), 12: 0.64 ms between them on
// hardware; transport timeout 14 (67 ms) with 7 retries.
constexpr std::uint8_t rnr_retry_forever = 7;
constexpr std::uint8_t min_rnr_timer = 12;
constexpr std::uint8_t transport_timeout = 14;
constexpr std::uint8_t transport_retry_cnt = 7;

// Peers per allgather round: two QP numbers each, 64 bytes per rank.
constexpr std::size_t peers_per_round = ibv_bootstrap_t::allgather_bytes_max / 8;

struct address_t {  // round 0 of the exchange
  std::uint16_t lid;
  std::uint8_t gid[16];
};

}  // namespace

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

}  // namespace lci::backend::ibv
