// Locality: which ranks of a job share a node, learned in one exchange over
// the bootstrap, and the job's secret token (docs/backends/shm.md,
// "Locality").
//
// Each rank publishes its host identity (hostname, the kernel's boot_id,
// the inode numbers of its ipc and pid namespaces) and its pid; rank 0 also
// publishes 16 random bytes (getrandom), the job token, which every rank
// reads after the same fence. Two ranks are on one node, and may share
// memory, when hostname, boot_id and ipc namespace agree; they may also use
// cross-memory attach (CMA) when their pid namespaces agree too (a pid means
// something only inside its namespace).
//
// LCI_LOCALITY_RANKS_PER_NODE=k (k >= 1) pretends that ranks r with the same
// r / k are on a node of their own, on top of the real identity: one machine
// then runs a job of mixed local and remote peers. Every rank must see the
// same k; a mismatch is an error.
//
// Thread safety: exchange_locality() is a bootstrap collective: one thread
//                per process, like the bootstrap_t it uses.
//                compute_locality() and read_host_identity() are pure (the
//                latter reads /proc and the hostname).
// Blocking:      exchange_locality() blocks in one fence of the bootstrap.
// Ownership:     the returned locality_t is a value; it keeps nothing of the
//                bootstrap.
// Allocation:    the returned vectors and strings.
// Limits:        once per bootstrap_t (it puts the keys "lci_locality" and
//                "lci_job_token"; a second call breaks the bootstrap's
//                put-once precondition, unchecked). A record must fit the
//                bootstrap's value_size_bytes_max (a hostname is at most
//                host_name_length_max characters). Unreadable /proc files,
//                a malformed peer record, a bad or inconsistent
//                LCI_LOCALITY_RANKS_PER_NODE throw std::runtime_error.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lci/bootstrap/bootstrap.hpp"

namespace lci::bootstrap {

inline constexpr std::size_t job_token_size_bytes = 16;
using job_token_t = std::array<std::byte, job_token_size_bytes>;

// POSIX HOST_NAME_MAX on Linux.
inline constexpr std::size_t host_name_length_max = 64;

struct host_identity_t {
  std::string hostname;
  std::string boot_id;  // /proc/sys/kernel/random/boot_id, without the newline
  std::uint64_t ipc_namespace = 0;  // inode of /proc/self/ns/ipc
  std::uint64_t pid_namespace = 0;  // inode of /proc/self/ns/pid
};

// What one rank publishes.
struct locality_record_t {
  host_identity_t host;
  pid_t pid = 0;
  int ranks_per_node_pretend = 0;  // LCI_LOCALITY_RANKS_PER_NODE; 0: unset
};

struct locality_peer_t {
  int node_index = -1;      // nodes numbered by their lowest rank's order
  bool is_local = false;    // same node as me: may share memory
  bool cma_allowed = false; // is_local and the same pid namespace
  pid_t pid = 0;            // in that rank's pid namespace
  std::uint64_t pid_namespace = 0;
};

struct locality_t {
  int rank_me = 0;
  std::vector<locality_peer_t> peers;  // one per rank, me included
  int node_n = 0;
  int local_rank_me = 0;               // my index in local_ranks
  std::vector<int> local_ranks;        // the ranks of my node, ascending
  int leader_rank = 0;                 // local_ranks.front()
  job_token_t job_token{};
  host_identity_t host_me;
};

// This process's identity; throws std::runtime_error when a /proc file
// cannot be read or the hostname is longer than host_name_length_max.
host_identity_t read_host_identity();

// LCI_LOCALITY_RANKS_PER_NODE as an integer >= 1, or 0 when unset; throws
// std::runtime_error on anything else.
int read_ranks_per_node_pretend();

// The locality as rank_me sees it, from every rank's record (index = rank)
// and the job token. Throws std::runtime_error when the records disagree on
// ranks_per_node_pretend.
locality_t compute_locality(const std::vector<locality_record_t>& records, int rank_me,
                            const job_token_t& job_token);

// The record <-> the bootstrap value (text; throws std::runtime_error on a
// malformed value, quoting it).
std::string encode_locality_record(const locality_record_t& record);
locality_record_t decode_locality_record(const std::string& text);

// Collective over every rank of the bootstrap: publish, fence, read all.
locality_t exchange_locality(bootstrap_t& bootstrap);

}  // namespace lci::bootstrap
