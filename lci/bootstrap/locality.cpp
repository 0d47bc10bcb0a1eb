// The locality exchange (locality.hpp, docs/backends/shm.md "Locality").
#include "lci/bootstrap/locality.hpp"

#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string_view>
#include <tuple>

#include "lci/util/assert.hpp"

namespace lci::bootstrap {

namespace {

constexpr const char* record_key = "lci_locality";
constexpr const char* token_key = "lci_job_token";

[[noreturn]] void fail_errno(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

std::string read_first_line(const char* path) {
  std::ifstream file(path);
  std::string line;
  if (!file || !std::getline(file, line) || line.empty()) {
    throw std::runtime_error(std::string("cannot read ") + path);
  }
  return line;
}

// The namespace's identity is the inode of its /proc/self/ns link's target.
std::uint64_t namespace_inode(const char* path) {
  struct stat status;
  if (::stat(path, &status) != 0) fail_errno(std::string("stat ") + path);
  return status.st_ino;
}

job_token_t draw_job_token() {
  job_token_t token;
  std::size_t filled = 0;
  // Bounded: getrandom returns at least 1 byte or fails; EINTR only before
  // any byte, and 16 bytes never block once the pool is initialized.
  while (filled < token.size()) {
    const ssize_t got = ::getrandom(token.data() + filled, token.size() - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) fail_errno("getrandom");
    filled += static_cast<std::size_t>(got);
  }
  return token;
}

template <typename integer_t>
integer_t parse_integer(std::string_view text, const std::string& whole) {
  integer_t value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    throw std::runtime_error("malformed locality record \"" + whole + "\"");
  }
  return value;
}

// The node a record belongs to: the machine, its boot, the ipc namespace,
// and the pretended node group.
using node_key_t = std::tuple<std::string, std::string, std::uint64_t, int>;

node_key_t node_key(const locality_record_t& record, int rank) {
  const int group = record.ranks_per_node_pretend > 0 ? rank / record.ranks_per_node_pretend : 0;
  return {record.host.hostname, record.host.boot_id, record.host.ipc_namespace, group};
}

}  // namespace

host_identity_t read_host_identity() {
  host_identity_t host;
  char name[host_name_length_max + 1] = {};
  if (::gethostname(name, sizeof(name)) != 0) fail_errno("gethostname");
  if (name[host_name_length_max] != '\0') throw std::runtime_error("hostname too long");
  host.hostname = name;
  host.boot_id = read_first_line("/proc/sys/kernel/random/boot_id");
  host.ipc_namespace = namespace_inode("/proc/self/ns/ipc");
  host.pid_namespace = namespace_inode("/proc/self/ns/pid");
  return host;
}

int read_ranks_per_node_pretend() {
  const char* text = std::getenv("LCI_LOCALITY_RANKS_PER_NODE");
  if (text == nullptr) return 0;
  const std::string whole = std::string("LCI_LOCALITY_RANKS_PER_NODE=") + text;
  int value = 0;
  const std::string_view view(text);
  const auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), value);
  if (view.empty() || error != std::errc() || end != view.data() + view.size() || value < 1) {
    throw std::runtime_error(whole + " is not an integer >= 1");
  }
  return value;
}

std::string encode_locality_record(const locality_record_t& record) {
  // The hostname goes last: it is the only field that may hold spaces.
  return std::to_string(record.pid) + " " + std::to_string(record.host.ipc_namespace) + " " +
         std::to_string(record.host.pid_namespace) + " " +
         std::to_string(record.ranks_per_node_pretend) + " " + record.host.boot_id + " " +
         record.host.hostname;
}

locality_record_t decode_locality_record(const std::string& text) {
  std::string_view rest(text);
  std::string_view fields[5];
  for (std::string_view& field : fields) {
    const std::size_t space = rest.find(' ');
    if (space == std::string_view::npos) {
      throw std::runtime_error("malformed locality record \"" + text + "\"");
    }
    field = rest.substr(0, space);
    rest.remove_prefix(space + 1);
  }
  locality_record_t record;
  record.pid = parse_integer<pid_t>(fields[0], text);
  record.host.ipc_namespace = parse_integer<std::uint64_t>(fields[1], text);
  record.host.pid_namespace = parse_integer<std::uint64_t>(fields[2], text);
  record.ranks_per_node_pretend = parse_integer<int>(fields[3], text);
  record.host.boot_id = std::string(fields[4]);
  record.host.hostname = std::string(rest);
  if (record.pid <= 0 || record.ranks_per_node_pretend < 0 || record.host.boot_id.empty() ||
      record.host.hostname.empty()) {
    throw std::runtime_error("malformed locality record \"" + text + "\"");
  }
  return record;
}

locality_t compute_locality(const std::vector<locality_record_t>& records, int rank_me,
                            const job_token_t& job_token) {
  const int rank_n = static_cast<int>(records.size());
  check_rank(rank_me, rank_n);
  locality_t locality;
  locality.rank_me = rank_me;
  locality.job_token = job_token;
  locality.host_me = records[rank_me].host;
  locality.peers.resize(rank_n);
  std::map<node_key_t, int> node_indices;
  for (int rank = 0; rank < rank_n; ++rank) {
    if (records[rank].ranks_per_node_pretend != records[rank_me].ranks_per_node_pretend) {
      throw std::runtime_error("LCI_LOCALITY_RANKS_PER_NODE differs between ranks " +
                               std::to_string(rank_me) + " and " + std::to_string(rank));
    }
    // Ranks are visited in order, so a node's index follows its lowest rank's.
    const auto entry =
        node_indices.emplace(node_key(records[rank], rank), static_cast<int>(node_indices.size()))
            .first;
    locality.peers[rank].node_index = entry->second;
    locality.peers[rank].pid = records[rank].pid;
    locality.peers[rank].pid_namespace = records[rank].host.pid_namespace;
  }
  const int node_me = locality.peers[rank_me].node_index;
  for (int rank = 0; rank < rank_n; ++rank) {
    locality_peer_t& peer = locality.peers[rank];
    peer.is_local = peer.node_index == node_me;
    peer.cma_allowed =
        peer.is_local && records[rank].host.pid_namespace == records[rank_me].host.pid_namespace;
    if (rank == rank_me) LCI_ASSERT(peer.is_local, "a rank is local to itself");
    if (!peer.is_local) continue;
    if (rank == rank_me) locality.local_rank_me = static_cast<int>(locality.local_ranks.size());
    locality.local_ranks.push_back(rank);
  }
  locality.node_n = static_cast<int>(node_indices.size());
  locality.leader_rank = locality.local_ranks.front();
  LCI_ASSERT(locality.local_ranks[locality.local_rank_me] == rank_me, "my local rank");
  LCI_ASSERT(locality.leader_rank <= rank_me, "the leader is the node's lowest rank");
  return locality;
}

locality_t exchange_locality(bootstrap_t& bootstrap) {
  locality_record_t record;
  record.host = read_host_identity();
  record.pid = ::getpid();
  record.ranks_per_node_pretend = read_ranks_per_node_pretend();
  const std::string text = encode_locality_record(record);
  bootstrap.put(record_key, text.data(), text.size());
  if (bootstrap.rank_me() == 0) {
    const job_token_t token = draw_job_token();
    bootstrap.put(token_key, token.data(), token.size());
  }
  bootstrap.fence();

  std::vector<locality_record_t> records(bootstrap.rank_n());
  for (int rank = 0; rank < bootstrap.rank_n(); ++rank) {
    const std::vector<std::byte> value = bootstrap.get(rank, record_key);
    records[rank] = decode_locality_record(
        std::string(reinterpret_cast<const char*>(value.data()), value.size()));
  }
  const std::vector<std::byte> token_value = bootstrap.get(0, token_key);
  job_token_t token;
  if (token_value.size() != token.size()) {
    throw std::runtime_error("job token of " + std::to_string(token_value.size()) +
                             " bytes from rank 0, expected " + std::to_string(token.size()));
  }
  std::memcpy(token.data(), token_value.data(), token.size());
  return compute_locality(records, bootstrap.rank_me(), token);
}

}  // namespace lci::bootstrap
