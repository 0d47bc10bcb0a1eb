// open_bootstrap()'s detection and its errors for inconsistent environments,
// the argument checks, and the local backend's exchange.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "lci/bootstrap/bootstrap.hpp"

namespace {

namespace bs = lci::bootstrap;

const char* const launcher_variables[] = {
    "LCI_BOOTSTRAP", "LCIRUN_ADDR", "LCIRUN_RANK",    "LCIRUN_SIZE",
    "LCIRUN_JOB",    "PMIX_RANK",   "PMIX_NAMESPACE", "PMI_FD",
    "PMI_RANK",      "PMI_SIZE",    "PMI_ID",         "PMI_JOBID",
    "PMI_VERSION",   "PMI_PORT"};

// Every test starts and ends without any launcher's variables.
class BootstrapEnv : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* name : launcher_variables) ::unsetenv(name);
  }
  static void set(const char* name, const std::string& value) {
    ::setenv(name, value.c_str(), 1);
  }

  // open_bootstrap() must throw std::runtime_error containing every part.
  static void expect_open_error(const std::vector<std::string>& parts) {
    try {
      bs::open_bootstrap();
    } catch (const std::runtime_error& error) {
      const std::string text = error.what();
      for (const std::string& part : parts) {
        EXPECT_NE(text.find(part), std::string::npos)
            << "error text: " << text << "\nexpected to contain: " << part;
      }
      return;
    }
    ADD_FAILURE() << "open_bootstrap() did not throw std::runtime_error";
  }
};

std::vector<std::byte> bytes_of(std::initializer_list<int> values) {
  std::vector<std::byte> bytes;
  for (int value : values) bytes.push_back(static_cast<std::byte>(value));
  return bytes;
}

TEST_F(BootstrapEnv, NothingSetMeansLocalRankZeroOfOne) {
  const auto bootstrap = bs::open_bootstrap();
  EXPECT_EQ(bootstrap->kind(), bs::bootstrap_kind_t::local);
  EXPECT_EQ(bootstrap->rank_me(), 0);
  EXPECT_EQ(bootstrap->rank_n(), 1);
}

TEST_F(BootstrapEnv, LocalOverridesALauncherEnvironment) {
  set("LCI_BOOTSTRAP", "local");
  set("PMI_RANK", "1");
  set("PMIX_RANK", "1");
  EXPECT_EQ(bs::open_bootstrap()->kind(), bs::bootstrap_kind_t::local);
}

TEST_F(BootstrapEnv, EmptyLciBootstrapMeansDetect) {
  set("LCI_BOOTSTRAP", "");
  EXPECT_EQ(bs::open_bootstrap()->kind(), bs::bootstrap_kind_t::local);
}

TEST_F(BootstrapEnv, UnknownKindIsNamed) {
  set("LCI_BOOTSTRAP", "mpi");
  expect_open_error({"LCI_BOOTSTRAP=mpi names no bootstrap",
                     "local, pmix, pmi1, pmi2 or lcirun"});
}

TEST_F(BootstrapEnv, KindNames) {
  EXPECT_STREQ(bs::get_bootstrap_kind_str(bs::bootstrap_kind_t::local),
               "local");
  EXPECT_STREQ(bs::get_bootstrap_kind_str(bs::bootstrap_kind_t::pmix), "pmix");
  EXPECT_STREQ(bs::get_bootstrap_kind_str(bs::bootstrap_kind_t::pmi1), "pmi1");
  EXPECT_STREQ(bs::get_bootstrap_kind_str(bs::bootstrap_kind_t::pmi2), "pmi2");
  EXPECT_STREQ(bs::get_bootstrap_kind_str(bs::bootstrap_kind_t::lcirun),
               "lcirun");
}

// ---- PMI ----

TEST_F(BootstrapEnv, PmiRankWithoutPmiFd) {
  set("PMI_RANK", "0");
  set("PMI_SIZE", "2");
  expect_open_error(
      {"PMI_RANK=0", "PMI_SIZE=2", "PMI_FD=(unset)", "LCI_BOOTSTRAP=local"});
}

TEST_F(BootstrapEnv, PmiPortWithoutPmiFd) {
  set("PMI_PORT", "node7:4000");
  expect_open_error(
      {"PMI_PORT=node7:4000", "PMI_FD=(unset)", "PMI_PORT are not supported"});
}

TEST_F(BootstrapEnv, PmiKindsRequestedWithoutPmiFd) {
  for (const char* kind : {"pmi1", "pmi2"}) {
    set("LCI_BOOTSTRAP", kind);
    expect_open_error({std::string("LCI_BOOTSTRAP=") + kind, "PMI_FD=(unset)",
                       std::string("the ") + kind + " bootstrap needs PMI_FD"});
  }
}

TEST_F(BootstrapEnv, PmiFdMustBeADescriptorNumber) {
  set("PMI_FD", "seven");
  expect_open_error({"PMI_FD=seven is not an integer >= 0"});
  set("PMI_FD", "-1");
  expect_open_error({"PMI_FD=-1 is not an integer >= 0"});
}

TEST_F(BootstrapEnv, PmiFdMustBeOpen) {
  // The lowest free descriptor is closed until something opens it.
  const int fd = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(fd, 0);
  ::close(fd);
  set("PMI_FD", std::to_string(fd));
  set("PMI_RANK", "0");
  set("PMI_SIZE", "1");
  expect_open_error(
      {"PMI_FD=" + std::to_string(fd), "is not an open file descriptor"});
}

TEST_F(BootstrapEnv, PmiRankOutsideTheJob) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  set("PMI_FD", std::to_string(pair[0]));
  set("PMI_RANK", "2");
  set("PMI_SIZE", "2");
  expect_open_error({"PMI_RANK=2 PMI_SIZE=2: rank outside the job"});
  ::close(pair[0]);
  ::close(pair[1]);
}

// ---- PMIx ----

#if defined(LCI_TEST_PMIX_COMPILED_IN)
TEST_F(BootstrapEnv, PmixRequestedWithoutAPmixLauncher) {
  set("LCI_BOOTSTRAP", "pmix");
  expect_open_error({"LCI_BOOTSTRAP=pmix", "PMIX_RANK=(unset)",
                     "needs PMIX_RANK and PMIX_NAMESPACE"});
}
#else
TEST_F(BootstrapEnv, PmixLauncherWithoutPmixCompiledIn) {
  set("PMIX_RANK", "0");
  set("PMIX_NAMESPACE", "job-7");
  expect_open_error({"PMIX_RANK=0", "PMIX_NAMESPACE=job-7",
                     "PMIx support is not compiled in", "--config=pmix"});
}

TEST_F(BootstrapEnv, PmixRequestedWithoutPmixCompiledIn) {
  set("LCI_BOOTSTRAP", "pmix");
  expect_open_error({"LCI_BOOTSTRAP=pmix", "not compiled in"});
}
#endif

// ---- lcirun ----

void set_lcirun(const std::string& address, const std::string& rank,
                const std::string& size) {
  ::setenv("LCIRUN_ADDR", address.c_str(), 1);
  ::setenv("LCIRUN_RANK", rank.c_str(), 1);
  ::setenv("LCIRUN_SIZE", size.c_str(), 1);
  ::setenv("LCIRUN_JOB", "token", 1);
}

TEST_F(BootstrapEnv, PartialLcirunEnvironmentNamesWhatIsMissing) {
  set("LCIRUN_ADDR", "127.0.0.1:4000");
  expect_open_error({"partial lcirun environment", "LCIRUN_ADDR=127.0.0.1:4000",
                     "LCIRUN_RANK, LCIRUN_SIZE, LCIRUN_JOB missing"});
  ::unsetenv("LCIRUN_ADDR");
  set("LCIRUN_JOB", "token");
  expect_open_error({"LCIRUN_ADDR, LCIRUN_RANK, LCIRUN_SIZE missing"});
}

TEST_F(BootstrapEnv, LcirunRequestedWithoutLcirun) {
  set("LCI_BOOTSTRAP", "lcirun");
  expect_open_error({"partial lcirun environment", "tools/lcirun"});
}

TEST_F(BootstrapEnv, LcirunRankOutsideTheJob) {
  set_lcirun("127.0.0.1:4000", "2", "2");
  expect_open_error({"LCIRUN_RANK=2 LCIRUN_SIZE=2: rank outside the job"});
}

TEST_F(BootstrapEnv, LcirunAddressMustBeIpv4AndPort) {
  for (const char* address : {"localhost:4000", "127.0.0.1", "127.0.0.1:",
                              "127.0.0.1:70000", "127.0.0.1:4x"}) {
    set_lcirun(address, "0", "1");
    expect_open_error({std::string("LCIRUN_ADDR=") + address +
                       " is not <IPv4 address>:<port>"});
  }
}

TEST_F(BootstrapEnv, LcirunNotListening) {
  // A port that was just free: bind to an ephemeral port, then close it.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
            0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length),
            0);
  ::close(fd);
  const std::string target =
      "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  set_lcirun(target, "0", "1");
  expect_open_error({"cannot connect to lcirun at LCIRUN_ADDR=" + target});
}

// ---- argument checks ----

TEST(BootstrapChecks, Keys) {
  EXPECT_NO_THROW(bs::check_key("a"));
  EXPECT_NO_THROW(bs::check_key("Az09_"));
  EXPECT_NO_THROW(bs::check_key(std::string(bs::key_length_max, 'k')));
  EXPECT_THROW(bs::check_key(""), std::invalid_argument);
  EXPECT_THROW(bs::check_key(std::string(bs::key_length_max + 1, 'k')),
               std::invalid_argument);
  for (const char* key : {"a-b", "a b", "a=b", "a;b", "a.b", "\xc3\xa9"}) {
    EXPECT_THROW(bs::check_key(key), std::invalid_argument) << key;
  }
}

TEST(BootstrapChecks, ValueSizesAndRanks) {
  EXPECT_NO_THROW(bs::check_value_size(0));
  EXPECT_NO_THROW(bs::check_value_size(bs::value_size_bytes_max));
  EXPECT_THROW(bs::check_value_size(bs::value_size_bytes_max + 1),
               std::invalid_argument);
  EXPECT_NO_THROW(bs::check_rank(3, 4));
  EXPECT_THROW(bs::check_rank(4, 4), std::invalid_argument);
  EXPECT_THROW(bs::check_rank(-1, 4), std::invalid_argument);
}

// ---- the local backend's exchange ----

TEST_F(BootstrapEnv, LocalExchangePublishesAtTheFence) {
  const auto bootstrap = bs::open_bootstrap(bs::bootstrap_kind_t::local);
  const auto value = bytes_of({0x00, 0x7f, 0x00, 0xff});
  bootstrap->put("addr", value.data(), value.size());
  try {
    bootstrap->get(0, "addr");
    ADD_FAILURE() << "a value was readable before the fence";
  } catch (const std::runtime_error& error) {
    const std::string text = error.what();
    EXPECT_NE(text.find("'addr'"), std::string::npos) << text;
    EXPECT_NE(text.find("rank 0"), std::string::npos) << text;
  }
  bootstrap->fence();
  EXPECT_EQ(bootstrap->get(0, "addr"), value);
  bootstrap->barrier();
}

TEST_F(BootstrapEnv, LocalExchangeKeepsEmptyAndLargestValues) {
  const auto bootstrap = bs::open_bootstrap(bs::bootstrap_kind_t::local);
  const std::vector<std::byte> largest(bs::value_size_bytes_max, std::byte{1});
  bootstrap->put("empty", nullptr, 0);
  bootstrap->put("largest", largest.data(), largest.size());
  bootstrap->fence();
  EXPECT_TRUE(bootstrap->get(0, "empty").empty());
  EXPECT_EQ(bootstrap->get(0, "largest"), largest);
}

TEST_F(BootstrapEnv, LocalExchangeChecksArguments) {
  const auto bootstrap = bs::open_bootstrap(bs::bootstrap_kind_t::local);
  const std::vector<std::byte> too_large(bs::value_size_bytes_max + 1);
  EXPECT_THROW(bootstrap->put("x", too_large.data(), too_large.size()),
               std::invalid_argument);
  EXPECT_THROW(bootstrap->put("bad key", nullptr, 0), std::invalid_argument);
  bootstrap->fence();
  EXPECT_THROW(bootstrap->get(1, "x"), std::invalid_argument);
  EXPECT_THROW(bootstrap->get(0, "x"), std::runtime_error);
}

}  // namespace
