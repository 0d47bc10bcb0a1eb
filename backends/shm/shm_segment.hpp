// segment_t: the job-private shared-memory segment of one node
// (docs/backends/shm.md, "The segment").
//
// The node's leader (its lowest rank, bootstrap/locality.hpp) creates it
// with shm_open(O_CREAT | O_EXCL, 0600) under segment_name(): this uid, the
// leader's pid namespace and pid, and half of the job token. The other local
// ranks open it without O_CREAT, check with fstat that this uid owns it with
// mode 0600 and the expected size, and that its header carries the whole job
// token. After a bootstrap barrier the leader unlinks the name, so once
// every rank attached nothing of the job remains in /dev/shm. A leader that
// dies between create and unlink leaves the name; the next leader of this
// uid and pid namespace removes every such name whose creator is provably
// dead (kill(pid, 0) fails with ESRCH), and nothing else.
//
// Layout: segment_header_t at offset 0, then one segment_slot_t per local
// rank, then the payload from payload_offset_bytes (page-aligned) to the
// end. What the payload holds is the caller's (the queues).
//
// Thread safety: open_segment() is a bootstrap collective (one thread per
//                process). A segment_t's accessors may be called from any
//                thread; what the payload's bytes mean, and how threads and
//                processes synchronize on them, is the caller's.
// Blocking:      open_segment() blocks in two bootstrap barriers; the
//                accessors never block.
// Ownership:     a segment_t owns its mapping (munmap at destruction) and,
//                for the leader until the unlink, the name (unlinked at
//                destruction too, so that an exception on the way leaves
//                nothing).
// Allocation:    at open only (the name, the mapping).
// Limits:        the size is fixed at creation; header and slots take
//                payload_offset_bytes(). Every refusal (a name that
//                exists, a foreign or malformed segment, a system call that
//                fails) throws std::runtime_error naming the segment.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "lci/bootstrap/bootstrap.hpp"
#include "lci/bootstrap/locality.hpp"

namespace lci::backend::shm {

// "LCISHMS1": the header of a finished segment begins with it.
inline constexpr std::uint64_t segment_magic = 0x31534d4853494c43ull;
inline constexpr std::size_t segment_page_size_bytes = 4096;

struct segment_header_t {
  std::uint64_t magic;  // written last by the creator
  std::uint64_t size_bytes;
  std::uint64_t payload_offset_bytes;
  std::int64_t creator_pid;
  std::int32_t local_rank_n;
  std::int32_t padding;  // keeps job_token 8-byte aligned; always 0
  std::byte job_token[bootstrap::job_token_size_bytes];
};
// Processes of one build share it: a fixed layout, no hidden padding.
static_assert(std::is_standard_layout_v<segment_header_t>);
static_assert(sizeof(segment_header_t) == 56);

// One per local rank, written only by that rank (the CMA probe's).
struct segment_slot_t {
  std::int64_t pid;
  std::uint64_t probe_word_address;
  std::int32_t cma_status;
  std::int32_t cma_error_number;
};
static_assert(std::is_standard_layout_v<segment_slot_t>);
static_assert(sizeof(segment_slot_t) == 24);

// Where the payload begins for local_rank_n ranks (a page multiple).
std::size_t payload_offset_bytes(int local_rank_n);

// "/lci_shm_<uid>_<pid namespace>_<leader pid>_<16 hex digits>": the digits
// are the job token's first 8 bytes; the header carries all 16.
std::string segment_name(uid_t uid, std::uint64_t pid_namespace, pid_t leader_pid,
                         const bootstrap::job_token_t& job_token);

// Throws unless status is a regular file owned by uid, mode 0600 exactly,
// of size_bytes.
void check_segment_status(const struct stat& status, uid_t uid, std::size_t size_bytes,
                          const std::string& name);

// Unlinks the names in /dev/shm of segment_name()'s form with this uid and
// pid namespace whose creator pid is dead (kill(pid, 0): ESRCH) and which
// uid owns; returns them (with the leading '/').
std::vector<std::string> remove_stale_segments(uid_t uid, std::uint64_t pid_namespace);

class segment_t {
 public:
  segment_t(segment_t&& other) noexcept;
  segment_t& operator=(segment_t&&) = delete;
  segment_t(const segment_t&) = delete;
  ~segment_t();

  std::byte* base() const { return base_; }
  std::size_t size_bytes() const { return size_bytes_; }
  const std::string& name() const { return name_; }
  const segment_header_t& header() const;
  segment_slot_t& slot(int local_rank) const;
  std::byte* payload() const;
  std::size_t payload_size_bytes() const;

  // The steps of open_segment(), public for tests of each refusal.
  // Creates and initializes the segment (after remove_stale_segments()).
  static segment_t create(const std::string& name, int local_rank_n,
                          std::size_t payload_size_bytes, const bootstrap::job_token_t& job_token);
  // Opens one that exists and checks it: owner, mode, size, header, token.
  static segment_t attach(const std::string& name, int local_rank_n,
                          std::size_t payload_size_bytes, const bootstrap::job_token_t& job_token);
  // Removes the name (the leader, once every local rank attached).
  void unlink();

 private:
  segment_t(std::string name, std::byte* base, std::size_t size_bytes, bool owns_name);

  std::string name_;
  std::byte* base_;
  std::size_t size_bytes_;
  bool owns_name_;  // the creator, until unlink()
};

// Collective over every rank of the bootstrap: the leader creates, barrier,
// the others attach, barrier, the leader unlinks. Every local rank passes
// the same payload_size_bytes.
segment_t open_segment(bootstrap::bootstrap_t& bootstrap, const bootstrap::locality_t& locality,
                       std::size_t payload_size_bytes);

}  // namespace lci::backend::shm
