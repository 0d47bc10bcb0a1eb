// The segment's steps in one process: create, attach, unlink; each refusal
// of a forged segment (another job's token, no header, wrong mode, size or
// owner); the removal of names whose creator is dead and of nothing else;
// and open_segment() plus the CMA probe over the local bootstrap. Real
// processes: segment_check.
#include "backends/shm/shm_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>

#include "backends/shm/shm_cma.hpp"
#include "gtest/gtest.h"

namespace {

namespace bs = lci::bootstrap;
namespace shm = lci::backend::shm;

constexpr std::size_t payload_bytes = 8192;

// Tokens (and so names) differ per seed and per run: a name a failed run
// left behind never meets the next run.
bs::job_token_t token_of(unsigned char seed) {
  static const std::uint64_t run = std::random_device{}();
  bs::job_token_t token;
  for (std::size_t i = 0; i < token.size(); ++i) {
    token[i] = std::byte(seed + 13 * i + (run >> (8 * (i % 4))));
  }
  return token;
}

std::uint64_t my_pid_namespace() { return bs::read_host_identity().pid_namespace; }

// A name no other test process uses: this pid, a token per test.
std::string test_name(unsigned char seed) {
  return shm::segment_name(::geteuid(), my_pid_namespace(), ::getpid(), token_of(seed));
}

bool name_exists(const std::string& name) {
  const int fd = ::shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

// A segment file made by hand, as a forger would: mode and size chosen.
void forge(const std::string& name, mode_t mode, std::size_t size_bytes) {
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_EQ(::fchmod(fd, mode), 0);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(size_bytes)), 0);
  ::close(fd);
}

template <typename function_t>
std::string refusal_of(function_t function) {
  try {
    function();
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "(no refusal)";
}

TEST(Segment, CreateAttachShareUnlink) {
  const std::string name = test_name(1);
  shm::segment_t created = shm::segment_t::create(name, 2, payload_bytes, token_of(1));
  shm::segment_t attached = shm::segment_t::attach(name, 2, payload_bytes, token_of(1));
  EXPECT_EQ(attached.payload_size_bytes(), payload_bytes);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(attached.payload()) % shm::segment_page_size_bytes,
            0u);
  EXPECT_EQ(attached.header().creator_pid, ::getpid());
  created.payload()[payload_bytes - 1] = std::byte{0x5a};
  EXPECT_EQ(attached.payload()[payload_bytes - 1], std::byte{0x5a});
  created.slot(1).pid = 77;
  EXPECT_EQ(attached.slot(1).pid, 77);
  created.unlink();
  EXPECT_FALSE(name_exists(name));
  attached.payload()[0] = std::byte{0x11};  // the mappings outlive the name
  EXPECT_EQ(created.payload()[0], std::byte{0x11});
}

TEST(Segment, CreatorDestroyedBeforeUnlinkRemovesTheName) {
  const std::string name = test_name(2);
  { shm::segment_t created = shm::segment_t::create(name, 1, payload_bytes, token_of(2)); }
  EXPECT_FALSE(name_exists(name));
}

TEST(Segment, AnExistingNameIsNotCreatedAgain) {
  const std::string name = test_name(3);
  shm::segment_t created = shm::segment_t::create(name, 1, payload_bytes, token_of(3));
  EXPECT_NE(refusal_of([&] { shm::segment_t::create(name, 1, payload_bytes, token_of(3)); })
                .find("O_EXCL"),
            std::string::npos);
  EXPECT_TRUE(name_exists(name));  // the failed create left the first one alone
}

TEST(Segment, AnotherJobsTokenIsRefused) {
  const std::string name = test_name(4);
  shm::segment_t created = shm::segment_t::create(name, 1, payload_bytes, token_of(4));
  EXPECT_NE(refusal_of([&] { shm::segment_t::attach(name, 1, payload_bytes, token_of(5)); })
                .find("another job's token"),
            std::string::npos);
}

TEST(Segment, ASegmentWithoutHeaderIsRefused) {
  const std::string name = test_name(6);
  forge(name, 0600, shm::payload_offset_bytes(1) + payload_bytes);
  EXPECT_NE(refusal_of([&] { shm::segment_t::attach(name, 1, payload_bytes, token_of(6)); })
                .find("no segment header"),
            std::string::npos);
  ::shm_unlink(name.c_str());
}

TEST(Segment, WrongModeOrSizeIsRefused) {
  const std::string name = test_name(7);
  forge(name, 0644, shm::payload_offset_bytes(1) + payload_bytes);
  EXPECT_NE(refusal_of([&] { shm::segment_t::attach(name, 1, payload_bytes, token_of(7)); })
                .find("mode 0644"),
            std::string::npos);
  ::shm_unlink(name.c_str());
  shm::segment_t created = shm::segment_t::create(name, 1, payload_bytes, token_of(7));
  EXPECT_NE(refusal_of([&] { shm::segment_t::attach(name, 1, 2 * payload_bytes, token_of(7)); })
                .find("expected"),
            std::string::npos);
}

// Another uid's file: fstat's answer made up, since only root could chown.
TEST(Segment, AnotherOwnerIsRefused) {
  struct stat status = {};
  status.st_mode = S_IFREG | 0600;
  status.st_uid = ::geteuid() + 1;
  status.st_size = 4096;
  EXPECT_NE(refusal_of([&] { shm::check_segment_status(status, ::geteuid(), 4096, "/x"); })
                .find("owned by uid"),
            std::string::npos);
  status.st_uid = ::geteuid();
  EXPECT_EQ(refusal_of([&] { shm::check_segment_status(status, ::geteuid(), 4096, "/x"); }),
            "(no refusal)");
  status.st_mode = S_IFDIR | 0600;
  EXPECT_THROW(shm::check_segment_status(status, ::geteuid(), 4096, "/x"), std::runtime_error);
}

// A pid that provably names no process: a child that exited and was reaped.
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

TEST(Segment, OnlyNamesOfDeadCreatorsAreRemoved) {
  const pid_t dead = dead_pid();
  const std::uint64_t pid_namespace = my_pid_namespace();
  const std::string stale = shm::segment_name(::geteuid(), pid_namespace, dead, token_of(8));
  const std::string alive = shm::segment_name(::geteuid(), pid_namespace, ::getpid(), token_of(8));
  const std::string elsewhere =
      shm::segment_name(::geteuid(), pid_namespace + 1, dead, token_of(8));
  const std::string unrelated = "/lci_shm_not_a_segment_" + std::to_string(::getpid());
  for (const std::string& name : {stale, alive, elsewhere, unrelated}) forge(name, 0600, 4096);

  const std::vector<std::string> removed =
      shm::remove_stale_segments(::geteuid(), pid_namespace);
  EXPECT_NE(std::find(removed.begin(), removed.end(), stale), removed.end());
  EXPECT_FALSE(name_exists(stale));
  for (const std::string& name : {alive, elsewhere, unrelated}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(name_exists(name));
    EXPECT_EQ(std::find(removed.begin(), removed.end(), name), removed.end());
    ::shm_unlink(name.c_str());
  }
}

// One rank alone: it creates, unlinks, and probes CMA towards itself, which
// must agree with a direct read of this process's memory.
TEST(Segment, OpenAndProbeOverTheLocalBootstrap) {
  const auto bootstrap = bs::open_bootstrap(bs::bootstrap_kind_t::local);
  const bs::locality_t locality = bs::exchange_locality(*bootstrap);
  shm::segment_t segment = shm::open_segment(*bootstrap, locality, payload_bytes);
  EXPECT_FALSE(name_exists(segment.name()));
  EXPECT_EQ(segment.payload_size_bytes(), payload_bytes);

  const shm::cma_probe_t probe = shm::probe_cma(segment, *bootstrap, locality);
  const std::uint64_t word = 0x0123456789abcdefull;
  std::uint64_t copy = 0;
  const int error_number =
      shm::cma_read(::getpid(), reinterpret_cast<std::uintptr_t>(&word), &copy, sizeof(copy));
  const bool direct = error_number == 0 && copy == word;
  EXPECT_EQ(probe.status == shm::cma_status_t::available, direct)
      << shm::get_cma_status_str(probe.status) << " " << std::strerror(probe.error_number);
  if (!direct) {
    EXPECT_EQ(probe.error_number, error_number);
  }
  EXPECT_EQ(segment.slot(0).pid, ::getpid());
}

}  // namespace
