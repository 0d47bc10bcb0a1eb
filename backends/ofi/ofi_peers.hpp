// peer_table_t: the other ranks as processes — their pid and whether they
// run on this host — so that a device can tell a dead peer from a slow one
// where the provider never reports it. (Over shm, a send to a process that
// has exited waits for room in its queue forever: -FI_EAGAIN, no error.)
//
// Built collectively at context creation: every rank puts its identity (pid,
// host name and boot id) through the bootstrap and reads everyone's.
//
// Thread safety: is_alive() from any thread after construction (read-only
//                table; kill(2) and /proc reads are thread-safe).
// Blocking:      the constructor waits for every rank (bootstrap fence);
//                is_alive() makes one kill(2) and may read /proc/<pid>/stat.
// Ownership:     borrows the bootstrap only during construction.
// Allocation:    at construction only.
// Limits:        only peers on this host can be checked; a peer on another
//                host is always reported alive (its provider must report
//                its death as a completion error, as tcp does).
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "lci/bootstrap/bootstrap.hpp"

namespace lci::backend::ofi {

namespace detail {

// The state letter ('R', 'S', 'Z', ...) of `stat_line`, the one line of
// /proc/<pid>/stat (proc(5)): "<pid> (<command name>) <state> ...", where
// the command name may hold anything, ')' and spaces too; '?' when the line
// ends before a state. Pure: is_alive() reads the file.
char process_state_of(std::string_view stat_line);

}  // namespace detail

class peer_table_t {
 public:
  // Collective over every rank of `bootstrap`; `key` must be a fresh
  // bootstrap key (each rank puts it once).
  peer_table_t(bootstrap::bootstrap_t& bootstrap, const std::string& key);

  // False only when `rank` runs on this host and its process has exited
  // (gone, or a zombie its parent has not reaped yet). Never false for the
  // calling rank.
  bool is_alive(int rank) const;
  int rank_n() const { return static_cast<int>(local_pids_.size()); }

 private:
  // The pid of each rank on this host; 0 for ranks elsewhere and for self.
  std::vector<pid_t> local_pids_;
};

}  // namespace lci::backend::ofi
