// The PMI-1 and PMI-2 clients against a scripted server on a socketpair:
// the exact requests they send (handshakes, chunked values, key names), how
// they read replies, the PMI-2 -> PMI-1 fallback, and the errors for refused,
// malformed and cut-off replies.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lci/bootstrap/bootstrap.hpp"

namespace {

namespace bs = lci::bootstrap;

// One exchange of the script: the request the server expects, then what it
// answers. A line request is read up to '\n' (PMI-1 and the PMI-2
// handshake), a frame request by its length field.
struct step_t {
  enum format_t { line, frame } format;
  std::string request;  // without '\n' or the length field
  std::string reply;    // sent verbatim; empty: close the connection
};

// A PMI-2 reply frame with the length right-aligned, as hydra sends it.
std::string frame(const std::string& body) {
  std::string length = std::to_string(body.size());
  return std::string(6 - length.size(), ' ') + length + body;
}

// Plays a script on one end of a socketpair; the client gets the other end
// through PMI_FD. A request that differs from the script, or none within
// read_timeout_s, is recorded and ends the script by closing the
// connection, which the client sees as an error instead of hanging.
class fake_pmi_server_t {
 public:
  explicit fake_pmi_server_t(std::vector<step_t> script)
      : script_(std::move(script)) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) {
      throw std::runtime_error("socketpair failed");
    }
    server_fd_ = pair[0];
    client_fd_ = pair[1];
    constexpr int read_timeout_s = 10;
    timeval timeout{read_timeout_s, 0};
    ::setsockopt(server_fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout,
                 sizeof(timeout));
    thread_ = std::thread([this] { play(); });
  }

  ~fake_pmi_server_t() {
    if (thread_.joinable()) thread_.join();
  }

  int client_fd() const { return client_fd_; }

  // Waits for the script to end; returns what went wrong on the server side.
  std::vector<std::string> finish() {
    thread_.join();
    return problems_;
  }

 private:
  void play() {
    for (const step_t& step : script_) {
      std::string request;
      if (!receive(step.format, request)) {
        problems_.push_back("no request, expected '" + step.request + "'");
        break;
      }
      if (request != step.request) {
        problems_.push_back("request '" + request + "', expected '" +
                            step.request + "'");
        break;
      }
      if (step.reply.empty()) break;
      if (::write(server_fd_, step.reply.data(), step.reply.size()) !=
          static_cast<ssize_t>(step.reply.size())) {
        problems_.push_back("short write");
        break;
      }
    }
    ::close(server_fd_);
  }

  bool receive(step_t::format_t format, std::string& request) {
    if (format == step_t::line) {
      char c;
      while (::read(server_fd_, &c, 1) == 1) {
        if (c == '\n') return true;
        request += c;
      }
      return false;
    }
    std::string length;
    if (!receive_bytes(6, length)) return false;
    std::string body;
    if (!receive_bytes(std::stoul(length), body)) return false;
    // The length field is part of what the client must get right.
    std::string expected_length = std::to_string(body.size());
    expected_length.resize(6, ' ');
    request = length == expected_length ? body : "bad length '" + length + "'";
    return true;
  }

  bool receive_bytes(std::size_t size, std::string& out) {
    out.resize(size);
    std::size_t offset = 0;
    while (offset < size) {
      const ssize_t got = ::read(server_fd_, &out[offset], size - offset);
      if (got <= 0) return false;
      offset += static_cast<std::size_t>(got);
    }
    return true;
  }

  std::vector<step_t> script_;
  int server_fd_ = -1;
  int client_fd_ = -1;
  std::vector<std::string> problems_;
  std::thread thread_;
};

const char* const pmi_variables[] = {
    "LCI_BOOTSTRAP", "PMI_FD",      "PMI_RANK", "PMI_SIZE",  "PMI_ID",
    "PMI_JOBID",     "PMI_VERSION", "PMI_PORT", "PMIX_RANK", "LCIRUN_ADDR"};

class PmiClient : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* name : pmi_variables) ::unsetenv(name);
  }
  static void set(const char* name, const std::string& value) {
    ::setenv(name, value.c_str(), 1);
  }
  // PMI_FD, PMI_RANK, PMI_SIZE as hydra sets them.
  static void set_pmi(const fake_pmi_server_t& server, int rank, int size) {
    set("PMI_FD", std::to_string(server.client_fd()));
    set("PMI_RANK", std::to_string(rank));
    set("PMI_SIZE", std::to_string(size));
  }
};

const step_t pmi1_init = {step_t::line,
                          "cmd=init pmi_version=1 pmi_subversion=1",
                          "cmd=response_to_init pmi_version=1 "
                          "pmi_subversion=1 rc=0\n"};
const step_t pmi1_kvsname = {step_t::line, "cmd=get_my_kvsname",
                             "cmd=my_kvsname kvsname=kvs_7\n"};
const step_t pmi1_finalize = {step_t::line, "cmd=finalize",
                              "cmd=finalize_ack\n"};

step_t pmi1_maxes(int keylen_max, int vallen_max) {
  return {step_t::line, "cmd=get_maxes",
          "cmd=maxes kvsname_max=256 keylen_max=" + std::to_string(keylen_max) +
              " vallen_max=" + std::to_string(vallen_max) + "\n"};
}

template <typename body_t>
void expect_error(body_t body, const std::vector<std::string>& parts) {
  try {
    body();
  } catch (const std::runtime_error& error) {
    const std::string text = error.what();
    for (const std::string& part : parts) {
      EXPECT_NE(text.find(part), std::string::npos)
          << "error text: " << text << "\nexpected to contain: " << part;
    }
    return;
  }
  ADD_FAILURE() << "no std::runtime_error";
}

TEST_F(PmiClient, Pmi1PutsChunksAndReadsValues) {
  // vallen_max=40: chunks of 39 characters, so 20 bytes ("20." and 40 hex
  // digits) take two keys.
  std::string big_hex;
  for (int i = 0; i < 20; ++i) big_hex += "a5";
  const std::string big_text = "20." + big_hex;
  fake_pmi_server_t server({
      pmi1_init,
      pmi1_maxes(64, 40),
      pmi1_kvsname,
      {step_t::line, "cmd=put kvsname=kvs_7 key=addr-1-0 value=3.00ff10",
       "cmd=put_result rc=0 msg=success\n"},
      {step_t::line,
       "cmd=put kvsname=kvs_7 key=big-1-0 value=" + big_text.substr(0, 39),
       "cmd=put_result rc=0 msg=success\n"},
      {step_t::line,
       "cmd=put kvsname=kvs_7 key=big-1-1 value=" + big_text.substr(39),
       "cmd=put_result rc=0 msg=success\n"},
      {step_t::line, "cmd=barrier_in", "cmd=barrier_out\n"},
      {step_t::line, "cmd=get kvsname=kvs_7 key=addr-0-0",
       "cmd=get_result rc=0 msg=success value=2.abcd\n"},
      {step_t::line, "cmd=get kvsname=kvs_7 key=gone-0-0",
       "cmd=get_result rc=-1 msg=key_gone-0-0_not_found value=unknown\n"},
      {step_t::line, "cmd=barrier_in", "cmd=barrier_out\n"},
      pmi1_finalize,
  });
  set_pmi(server, 1, 2);
  {
    const auto bootstrap = bs::open_bootstrap();
    EXPECT_EQ(bootstrap->kind(), bs::bootstrap_kind_t::pmi1);
    EXPECT_EQ(bootstrap->rank_me(), 1);
    EXPECT_EQ(bootstrap->rank_n(), 2);
    const std::byte addr[] = {std::byte{0x00}, std::byte{0xff},
                              std::byte{0x10}};
    bootstrap->put("addr", addr, sizeof(addr));
    const std::vector<std::byte> big(20, std::byte{0xa5});
    bootstrap->put("big", big.data(), big.size());
    bootstrap->fence();
    EXPECT_EQ(bootstrap->get(0, "addr"),
              (std::vector<std::byte>{std::byte{0xab}, std::byte{0xcd}}));
    expect_error([&] { bootstrap->get(0, "gone"); },
                 {"bootstrap pmi1: rank 0 put no value under key 'gone'"});
    bootstrap->barrier();
  }  // finalize
  EXPECT_EQ(server.finish(), std::vector<std::string>{});
}

TEST_F(PmiClient, Pmi1ReadsAValueFromSeveralChunks) {
  fake_pmi_server_t server({
      pmi1_init,
      pmi1_maxes(64, 33),  // chunks of 32 characters
      pmi1_kvsname,
      {step_t::line, "cmd=get kvsname=kvs_7 key=k-1-0",
       "cmd=get_result rc=0 value=16.000102030405060708090a0b0c0d0\n"},
      {step_t::line, "cmd=get kvsname=kvs_7 key=k-1-1",
       "cmd=get_result rc=0 value=e0f\n"},
      {step_t::line, "cmd=get kvsname=kvs_7 key=k-1-0",
       "cmd=get_result rc=0 value=16.000102030405060708090a0b0c0d0\n"},
      {step_t::line, "cmd=get kvsname=kvs_7 key=k-1-1",
       "cmd=get_result rc=-1 msg=not_found\n"},
      pmi1_finalize,
  });
  set_pmi(server, 0, 2);
  {
    const auto bootstrap = bs::open_bootstrap();
    std::vector<std::byte> expected;
    for (int i = 0; i < 16; ++i) expected.push_back(static_cast<std::byte>(i));
    EXPECT_EQ(bootstrap->get(1, "k"), expected);
    expect_error([&] { bootstrap->get(1, "k"); },
                 {"chunk 1 of 2", "rank 1", "key 'k' is missing"});
  }
  EXPECT_EQ(server.finish(), std::vector<std::string>{});
}

// The minimum itself is enough: keys and values of 32 characters
// (keylen_max and vallen_max count the terminating NUL).
TEST_F(PmiClient, Pmi1AcceptsServerLimitsAtTheMinimum) {
  fake_pmi_server_t server({pmi1_init, pmi1_maxes(33, 33), pmi1_kvsname, pmi1_finalize});
  set_pmi(server, 0, 1);
  {
    const auto bootstrap = bs::open_bootstrap();
    EXPECT_EQ(bootstrap->kind(), bs::bootstrap_kind_t::pmi1);
    EXPECT_EQ(bootstrap->rank_n(), 1);
  }  // finalize
  EXPECT_EQ(server.finish(), std::vector<std::string>{});
}

TEST_F(PmiClient, Pmi1RefusesServerLimitsTooSmall) {
  fake_pmi_server_t server({pmi1_init, pmi1_maxes(16, 1024), pmi1_kvsname});
  set_pmi(server, 0, 1);
  expect_error([] { bs::open_bootstrap(); },
               {"PMI server keeps keys of 15 and values of 1023 characters",
                "at least 32"});
  EXPECT_EQ(server.finish(), std::vector<std::string>{});
}

TEST_F(PmiClient, Pmi1ReportsServerErrors) {
  fake_pmi_server_t server(
      {pmi1_init,
       {step_t::line, "cmd=get_maxes", "cmd=maxes rc=-1 msg=busy\n"}});
  set_pmi(server, 0, 1);
  expect_error([] { bs::open_bootstrap(); },
               {"answered maxes with rc=-1: busy"});
  EXPECT_EQ(server.finish(), std::vector<std::string>{});
}

TEST_F(PmiClient, Pmi1ReportsMalformedReplies) {
  fake_pmi_server_t server(
      {{step_t::line, "cmd=init pmi_version=1 pmi_subversion=1", "welcome\n"}});
  set_pmi(server, 0, 1);
  expect_error([] { bs::open_bootstrap(); },
               {"malformed PMI-1 response", "'welcome'"});
  EXPECT_EQ(server.finish(), std::vector<std::string>{});
}

TEST_F(PmiClient, Pmi1ReportsAServerThatHangsUp) {
  fake_pmi_server_t server(
      {{step_t::line, "cmd=init pmi_version=1 pmi_subversion=1", ""}});
  set_pmi(server, 0, 1);
  expect_error([] { bs::open_bootstrap(); },
               {"the PMI server (PMI_FD=", "closed the connection"});
  EXPECT_EQ(server.finish(), std::vector<std::string>{});
}

TEST_F(PmiClient, Pmi1NeedsRankAndSize) {
  fake_pmi_server_t server({});
  set("PMI_FD", std::to_string(server.client_fd()));
  set("LCI_BOOTSTRAP", "pmi1");
  expect_error([] { bs::open_bootstrap(); },
               {"PMI-1 needs PMI_RANK and PMI_SIZE"});
  EXPECT_EQ(server.finish(), std::vector<std::string>{});
}

const step_t pmi2_init = {step_t::line,
                          "cmd=init pmi_version=2 pmi_subversion=0",
                          "cmd=response_to_init pmi_version=2 "
                          "pmi_subversion=0 rc=0\n"};
const step_t pmi2_init_refused = {step_t::line,
                                  "cmd=init pmi_version=2 pmi_subversion=0",
                                  "cmd=response_to_init pmi_version=1 "
                                  "pmi_subversion=1 rc=-1\n"};

// Rank 1 of 2 over PMI-2, as the scripted servers below expect: puts 0x7f
// under "addr", fences, reads rank 0's 0x41, and finds no "gone".
void expect_pmi2_rank_1_of_2_exchange(bs::bootstrap_t& bootstrap) {
  EXPECT_EQ(bootstrap.kind(), bs::bootstrap_kind_t::pmi2);
  EXPECT_EQ(bootstrap.rank_me(), 1);
  EXPECT_EQ(bootstrap.rank_n(), 2);
  const std::byte value[] = {std::byte{0x7f}};
  bootstrap.put("addr", value, sizeof(value));
  bootstrap.fence();
  EXPECT_EQ(bootstrap.get(0, "addr"), std::vector<std::byte>{std::byte{0x41}});
  expect_error([&] { bootstrap.get(0, "gone"); },
               {"bootstrap pmi2: rank 0 put no value under key 'gone'"});
}

TEST_F(PmiClient, Pmi2SpeaksFrames) {
  fake_pmi_server_t server({
      pmi2_init,
      {step_t::frame, "cmd=fullinit;pmijobid=job-3;pmirank=1;threaded=FALSE;",
       frame("cmd=fullinit-response;pmi-version=2;pmi-subversion=0;rank=1;"
             "size=2;appnum=0;rc=0;")},
      {step_t::frame, "cmd=kvs-put;key=addr-1-0;value=1.7f;",
       frame("cmd=kvs-put-response;rc=0;")},
      {step_t::frame, "cmd=kvs-fence;", frame("cmd=kvs-fence-response;rc=0;")},
      {step_t::frame, "cmd=kvs-get;key=addr-0-0;",
       frame("cmd=kvs-get-response;found=TRUE;value=1.41;rc=0;")},
      {step_t::frame, "cmd=kvs-get;key=gone-0-0;",
       frame("cmd=kvs-get-response;found=FALSE;rc=0;")},
      {step_t::frame, "cmd=kvs-fence;", frame("cmd=kvs-fence-response;rc=0;")},
      {step_t::frame, "cmd=finalize;", frame("cmd=finalize-response;rc=0;")},
  });
  set_pmi(server, 1, 2);
  set("PMI_JOBID", "job-3");  // a PMI-2 launcher's hint
  {
    const auto bootstrap = bs::open_bootstrap();
    expect_pmi2_rank_1_of_2_exchange(*bootstrap);
    bootstrap->barrier();
  }
  EXPECT_EQ(server.finish(), std::vector<std::string>{});
}

// A PMI-2 reply frame as Slurm's pmi2 plugin (22.05) sends it: the length
// left-aligned and space-padded, where hydra right-aligns it.
std::string slurm_frame(const std::string& body) {
  std::string length = std::to_string(body.size());
  length.resize(6, ' ');
  return length + body;
}

// The conversation recorded (strace) under `srun --mpi=pmi2`: Slurm sets
// PMI_FD, PMI_RANK, PMI_SIZE and PMI_JOBID ("<job>.<step>") but no
// PMI_VERSION, puts rc first in every reply, and adds fields hydra lacks.
TEST_F(PmiClient, Pmi2SpeaksSlurmsFrames) {
  fake_pmi_server_t server({
      {step_t::line, "cmd=init pmi_version=2 pmi_subversion=0",
       "cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n"},
      {step_t::frame, "cmd=fullinit;pmijobid=8.0;pmirank=1;threaded=FALSE;",
       slurm_frame("cmd=fullinit-response;rc=0;pmi-version=2;"
                   "pmi-subversion=0;rank=1;size=2;appnum=-1;"
                   "debugged=FALSE;pmiverbose=FALSE;")},
      {step_t::frame, "cmd=kvs-put;key=addr-1-0;value=1.7f;",
       slurm_frame("cmd=kvs-put-response;rc=0;")},
      {step_t::frame, "cmd=kvs-fence;",
       slurm_frame("cmd=kvs-fence-response;rc=0;")},
      {step_t::frame, "cmd=kvs-get;key=addr-0-0;",
       slurm_frame("cmd=kvs-get-response;rc=0;found=TRUE;value=1.41;")},
      {step_t::frame, "cmd=kvs-get;key=gone-0-0;",
       slurm_frame("cmd=kvs-get-response;rc=0;found=FALSE;")},
      {step_t::frame, "cmd=finalize;",
       slurm_frame("cmd=finalize-response;rc=0;")},
  });
  set_pmi(server, 1, 2);
  set("PMI_JOBID", "8.0");
  {
    const auto bootstrap = bs::open_bootstrap();
    expect_pmi2_rank_1_of_2_exchange(*bootstrap);
  }
  EXPECT_EQ(server.finish(), std::vector<std::string>{});
}

TEST_F(PmiClient, Pmi2HintFallsBackToPmi1WhenRefused) {
  fake_pmi_server_t server({pmi2_init_refused, pmi1_init, pmi1_maxes(64, 1024),
                            pmi1_kvsname, pmi1_finalize});
  set_pmi(server, 0, 1);
  set("PMI_VERSION", "2");
  {
    const auto bootstrap = bs::open_bootstrap();
    EXPECT_EQ(bootstrap->kind(), bs::bootstrap_kind_t::pmi1);
  }
  EXPECT_EQ(server.finish(), std::vector<std::string>{});
}

TEST_F(PmiClient, Pmi2RequestedAndRefusedIsAnError) {
  fake_pmi_server_t server({pmi2_init_refused});
  set_pmi(server, 0, 1);
  set("LCI_BOOTSTRAP", "pmi2");
  expect_error([] { bs::open_bootstrap(); },
               {"refused PMI-2.0", "LCI_BOOTSTRAP=pmi1"});
  EXPECT_EQ(server.finish(), std::vector<std::string>{});
}

TEST_F(PmiClient, Pmi2ReportsFailedAndMalformedFrames) {
  fake_pmi_server_t failed({
      pmi2_init,
      {step_t::frame, "cmd=fullinit;pmirank=0;threaded=FALSE;",
       frame("cmd=fullinit-response;rc=3;errmsg=no such rank;")},
  });
  set_pmi(failed, 0, 1);
  set("LCI_BOOTSTRAP", "pmi2");
  expect_error([] { bs::open_bootstrap(); },
               {"answered fullinit-response with rc=3: no such rank"});
  EXPECT_EQ(failed.finish(), std::vector<std::string>{});

  fake_pmi_server_t malformed({
      pmi2_init,
      {step_t::frame, "cmd=fullinit;pmirank=0;threaded=FALSE;", "  x5cmd=y;"},
  });
  set_pmi(malformed, 0, 1);
  expect_error([] { bs::open_bootstrap(); }, {"malformed PMI-2 length field"});
  EXPECT_EQ(malformed.finish(), std::vector<std::string>{});
}

}  // namespace
