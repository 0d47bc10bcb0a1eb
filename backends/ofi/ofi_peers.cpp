#include "backends/ofi/ofi_peers.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "lci/util/assert.hpp"

namespace lci::backend::ofi {

namespace {

// What a rank publishes: its pid and where it runs. Two processes share a
// pid namespace on one host only if host name and boot id both match (a
// container with its own namespace on the same kernel is then still told
// apart by the host name it sets).
struct identity_t {
  std::int64_t pid = 0;
  char host[192] = {};
};

identity_t own_identity() {
  identity_t identity;
  identity.pid = static_cast<std::int64_t>(getpid());
  char name[64] = {};
  gethostname(name, sizeof(name) - 1);
  std::string boot_id;
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::getline(boot, boot_id);
  std::snprintf(identity.host, sizeof(identity.host), "%s/%s", name, boot_id.c_str());
  return identity;
}

// The state letter of /proc/<pid>/stat ("R", "S", "Z", ...); '?' when the
// file cannot be read (the process is gone).
char process_state(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return '?';
  return detail::process_state_of(line);
}

}  // namespace

namespace detail {

char process_state_of(std::string_view stat_line) {
  // The command name in parentheses may contain anything; the state follows
  // the last ')' and a space.
  const std::size_t close = stat_line.rfind(')');
  if (close == std::string_view::npos || close + 2 >= stat_line.size()) return '?';
  return stat_line[close + 2];
}

}  // namespace detail

peer_table_t::peer_table_t(bootstrap::bootstrap_t& bootstrap, const std::string& key) {
  const identity_t mine = own_identity();
  bootstrap.put(key, &mine, sizeof(mine));
  bootstrap.fence();
  const int rank_n = bootstrap.rank_n();
  const int rank_me = bootstrap.rank_me();
  LCI_ASSERT(rank_n > 0, "a job has at least one rank");
  local_pids_.assign(rank_n, 0);
  for (int rank = 0; rank < rank_n; ++rank) {
    if (rank == rank_me) continue;
    const std::vector<std::byte> value = bootstrap.get(rank, key);
    if (value.size() != sizeof(identity_t)) {
      throw std::runtime_error("lci ofi: rank " + std::to_string(rank) +
                               " published a process identity of " +
                               std::to_string(value.size()) + " bytes, expected " +
                               std::to_string(sizeof(identity_t)));
    }
    identity_t peer;
    std::memcpy(&peer, value.data(), sizeof(peer));
    if (std::strncmp(peer.host, mine.host, sizeof(peer.host)) == 0) {
      local_pids_[rank] = static_cast<pid_t>(peer.pid);
    }
  }
}

bool peer_table_t::is_alive(int rank) const {
  LCI_ASSERT(rank >= 0 && rank < rank_n(), "is_alive: rank out of range");
  const pid_t pid = local_pids_[rank];
  if (pid <= 0) return true;  // self, or on another host: cannot tell
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  // kill() succeeds on a zombie: the process has exited, its parent (the
  // launcher) has not collected it yet.
  const char state = process_state(pid);
  return state != 'Z' && state != 'X' && state != '?';
}

}  // namespace lci::backend::ofi
