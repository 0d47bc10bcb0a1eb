// The node's shared segment (shm_segment.hpp, docs/backends/shm.md "The
// segment").
#include "backends/shm/shm_segment.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string_view>

#include "lci/util/assert.hpp"

namespace lci::backend::shm {

namespace {

constexpr std::string_view name_prefix = "lci_shm_";
constexpr std::size_t name_token_bytes = 8;
constexpr const char* shm_directory = "/dev/shm";

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw std::runtime_error("shm segment " + name + ": " + what);
}

[[noreturn]] void fail_errno(const std::string& name, const std::string& call) {
  fail(name, call + ": " + std::strerror(errno));
}

// Closes the descriptor when the scope ends (the mapping outlives it).
struct fd_guard_t {
  int fd;
  ~fd_guard_t() { ::close(fd); }
};

std::byte* map(int fd, std::size_t size_bytes, const std::string& name) {
  void* base = ::mmap(nullptr, size_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) fail_errno(name, "mmap");
  return static_cast<std::byte*>(base);
}

std::size_t total_size_bytes(int local_rank_n, std::size_t payload_size_bytes) {
  return payload_offset_bytes(local_rank_n) + payload_size_bytes;
}

template <typename integer_t>
bool parse_field(std::string_view text, int base, integer_t* value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value, base);
  return !text.empty() && error == std::errc() && end == text.data() + text.size();
}

// The creator pid of a name of segment_name()'s form with this uid and pid
// namespace; 0 for any other name.
pid_t creator_of(std::string_view name, uid_t uid, std::uint64_t pid_namespace) {
  if (name.substr(0, name_prefix.size()) != name_prefix) return 0;
  name.remove_prefix(name_prefix.size());
  std::string_view fields[4];
  for (int index = 0; index < 4; ++index) {
    const std::size_t end = index < 3 ? name.find('_') : name.size();
    if (end == std::string_view::npos) return 0;
    fields[index] = name.substr(0, end);
    name.remove_prefix(index < 3 ? end + 1 : end);
  }
  uid_t name_uid = 0;
  std::uint64_t name_namespace = 0;
  pid_t pid = 0;
  std::uint64_t token_part = 0;
  if (!parse_field(fields[0], 10, &name_uid) || name_uid != uid) return 0;
  if (!parse_field(fields[1], 10, &name_namespace) || name_namespace != pid_namespace) return 0;
  if (!parse_field(fields[2], 10, &pid) || pid <= 0) return 0;
  if (fields[3].size() != 2 * name_token_bytes || !parse_field(fields[3], 16, &token_part)) {
    return 0;
  }
  return pid;
}

}  // namespace

std::size_t payload_offset_bytes(int local_rank_n) {
  LCI_ASSERT(local_rank_n >= 1, "a node has at least one rank");
  const std::size_t used =
      sizeof(segment_header_t) + static_cast<std::size_t>(local_rank_n) * sizeof(segment_slot_t);
  return (used + segment_page_size_bytes - 1) / segment_page_size_bytes * segment_page_size_bytes;
}

std::string segment_name(uid_t uid, std::uint64_t pid_namespace, pid_t leader_pid,
                         const bootstrap::job_token_t& job_token) {
  std::string name = "/" + std::string(name_prefix) + std::to_string(uid) + "_" +
                     std::to_string(pid_namespace) + "_" + std::to_string(leader_pid) + "_";
  for (std::size_t index = 0; index < name_token_bytes; ++index) {
    char digits[3];
    std::snprintf(digits, sizeof(digits), "%02x", static_cast<unsigned>(job_token[index]));
    name += digits;
  }
  return name;
}

void check_segment_status(const struct stat& status, uid_t uid, std::size_t size_bytes,
                          const std::string& name) {
  if (!S_ISREG(status.st_mode)) fail(name, "not a regular file");
  if (status.st_uid != uid) {
    fail(name, "owned by uid " + std::to_string(status.st_uid) + ", not " + std::to_string(uid));
  }
  if ((status.st_mode & 07777) != 0600) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(status.st_mode & 07777));
    fail(name, std::string("mode ") + mode + ", not 0600");
  }
  if (static_cast<std::size_t>(status.st_size) != size_bytes) {
    fail(name, std::to_string(status.st_size) + " bytes, expected " + std::to_string(size_bytes));
  }
}

std::vector<std::string> remove_stale_segments(uid_t uid, std::uint64_t pid_namespace) {
  std::vector<std::string> removed;
  std::unique_ptr<DIR, int (*)(DIR*)> directory(::opendir(shm_directory), ::closedir);
  if (!directory) return removed;  // no /dev/shm: nothing can be stale there
  // Bounded by the directory's entries; names removed meanwhile are skipped.
  while (const dirent* entry = ::readdir(directory.get())) {
    const pid_t creator = creator_of(entry->d_name, uid, pid_namespace);
    if (creator == 0) continue;
    struct stat status;
    if (::fstatat(::dirfd(directory.get()), entry->d_name, &status, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(status.st_mode) || status.st_uid != uid) {
      continue;
    }
    // Only ESRCH proves the creator gone; EPERM means it lives.
    if (::kill(creator, 0) == 0 || errno != ESRCH) continue;
    const std::string name = "/" + std::string(entry->d_name);
    if (::shm_unlink(name.c_str()) == 0) removed.push_back(name);
  }
  return removed;
}

segment_t::segment_t(std::string name, std::byte* base, std::size_t size_bytes, bool owns_name)
    : name_(std::move(name)), base_(base), size_bytes_(size_bytes), owns_name_(owns_name) {}

segment_t::segment_t(segment_t&& other) noexcept
    : name_(std::move(other.name_)),
      base_(other.base_),
      size_bytes_(other.size_bytes_),
      owns_name_(other.owns_name_) {
  other.base_ = nullptr;
  other.owns_name_ = false;
}

segment_t::~segment_t() {
  if (owns_name_) ::shm_unlink(name_.c_str());
  if (base_ != nullptr) ::munmap(base_, size_bytes_);
}

const segment_header_t& segment_t::header() const {
  return *reinterpret_cast<const segment_header_t*>(base_);
}

segment_slot_t& segment_t::slot(int local_rank) const {
  LCI_ASSERT(local_rank >= 0, "local rank");
  LCI_ASSERT(local_rank < header().local_rank_n, "local rank");
  return reinterpret_cast<segment_slot_t*>(base_ + sizeof(segment_header_t))[local_rank];
}

std::byte* segment_t::payload() const { return base_ + header().payload_offset_bytes; }

std::size_t segment_t::payload_size_bytes() const {
  return size_bytes_ - header().payload_offset_bytes;
}

segment_t segment_t::create(const std::string& name, int local_rank_n,
                            std::size_t payload_size_bytes,
                            const bootstrap::job_token_t& job_token) {
  const std::size_t size_bytes = total_size_bytes(local_rank_n, payload_size_bytes);
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) fail_errno(name, "shm_open(O_CREAT | O_EXCL)");
  // From here the name is ours: an exception unlinks it.
  segment_t segment(name, nullptr, size_bytes, true);
  fd_guard_t guard{fd};
  // The umask may have narrowed the mode; attach() insists on 0600.
  if (::fchmod(fd, 0600) != 0) fail_errno(name, "fchmod");
  if (::ftruncate(fd, static_cast<off_t>(size_bytes)) != 0) fail_errno(name, "ftruncate");
  segment.base_ = map(fd, size_bytes, name);
  // ftruncate zeroed every byte, the slots included.
  segment_header_t& header = *reinterpret_cast<segment_header_t*>(segment.base_);
  header.size_bytes = size_bytes;
  header.payload_offset_bytes = payload_offset_bytes(local_rank_n);
  header.creator_pid = ::getpid();
  header.local_rank_n = local_rank_n;
  std::memcpy(header.job_token, job_token.data(), job_token.size());
  // Plain stores suffice: the other ranks read the header only after a
  // bootstrap barrier, whose system calls order these stores before them.
  header.magic = segment_magic;
  return segment;
}

segment_t segment_t::attach(const std::string& name, int local_rank_n,
                            std::size_t payload_size_bytes,
                            const bootstrap::job_token_t& job_token) {
  const std::size_t size_bytes = total_size_bytes(local_rank_n, payload_size_bytes);
  const int fd = ::shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) fail_errno(name, "shm_open");
  fd_guard_t guard{fd};
  struct stat status;
  if (::fstat(fd, &status) != 0) fail_errno(name, "fstat");
  check_segment_status(status, ::geteuid(), size_bytes, name);
  segment_t segment(name, map(fd, size_bytes, name), size_bytes, false);
  const segment_header_t& header = segment.header();
  if (header.magic != segment_magic) fail(name, "no segment header");
  if (std::memcmp(header.job_token, job_token.data(), job_token.size()) != 0) {
    fail(name, "the header carries another job's token");
  }
  if (header.size_bytes != size_bytes || header.local_rank_n != local_rank_n ||
      header.payload_offset_bytes != payload_offset_bytes(local_rank_n)) {
    fail(name, "the header's sizes differ from this rank's");
  }
  return segment;
}

void segment_t::unlink() {
  LCI_ASSERT(owns_name_, "only the creator unlinks, once");
  owns_name_ = false;
  if (::shm_unlink(name_.c_str()) != 0) fail_errno(name_, "shm_unlink");
}

segment_t open_segment(bootstrap::bootstrap_t& bootstrap, const bootstrap::locality_t& locality,
                       std::size_t payload_size_bytes) {
  LCI_ASSERT(locality.rank_me == bootstrap.rank_me(), "the locality of this rank");
  const bool leader = locality.leader_rank == locality.rank_me;
  const int local_rank_n = static_cast<int>(locality.local_ranks.size());
  const bootstrap::locality_peer_t& leader_peer = locality.peers[locality.leader_rank];
  // Named in the leader's pid namespace, where its pid means something.
  const std::string name = segment_name(::geteuid(), leader_peer.pid_namespace, leader_peer.pid,
                                        locality.job_token);
  if (leader) {
    remove_stale_segments(::geteuid(), locality.host_me.pid_namespace);
    segment_t segment = segment_t::create(name, local_rank_n, payload_size_bytes,
                                          locality.job_token);
    bootstrap.barrier();  // created: the others attach
    bootstrap.barrier();  // every local rank attached
    segment.unlink();
    return segment;
  }
  bootstrap.barrier();
  segment_t segment =
      segment_t::attach(name, local_rank_n, payload_size_bytes, locality.job_token);
  bootstrap.barrier();
  return segment;
}

}  // namespace lci::backend::shm
