// The client of tools/lcirun's key-value exchange: one TCP connection to
// LCIRUN_ADDR on loopback, one request line and one reply line at a time
// (docs/bootstrap.md, "The lcirun protocol"):
//   init <rank> <size> <job>   ok
//   put <key> <hex>            ok
//   fence                      ok      (once every rank entered it)
//   get <rank> <key>           value <hex> | missing
//   barrier                    ok      (once every rank entered it)
//   finalize                   ok
// Any request may be answered "error <text>" instead. The launcher keys
// values by (rank, key) itself and makes puts visible at the fence.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include "lci/bootstrap/detail/backends.hpp"
#include "lci/util/assert.hpp"

namespace lci::bootstrap::detail {

namespace {

// "value " and the hex of the largest value, with room to spare.
constexpr std::size_t lcirun_line_length_max = 4 * value_size_bytes_max;

int connect_to(const std::string& address) {
  const std::size_t colon = address.rfind(':');
  sockaddr_in target{};
  target.sin_family = AF_INET;
  const std::string host = address.substr(0, colon);
  const std::string port =
      colon == std::string::npos ? "" : address.substr(colon + 1);
  char* port_end = nullptr;
  const unsigned long port_number = std::strtoul(port.c_str(), &port_end, 10);
  if (colon == std::string::npos || port.empty() || *port_end != '\0' ||
      port_number == 0 || port_number > 65535 ||
      ::inet_pton(AF_INET, host.c_str(), &target.sin_addr) != 1) {
    throw std::runtime_error("LCIRUN_ADDR=" + address +
                             " is not <IPv4 address>:<port>");
  }
  target.sin_port = htons(static_cast<std::uint16_t>(port_number));
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  }
  int result;
  do {
    result = ::connect(fd, reinterpret_cast<const sockaddr*>(&target),
                       sizeof(target));
  } while (result != 0 && errno == EINTR);
  if (result != 0) {
    const int error = errno;
    ::close(fd);
    throw std::runtime_error("cannot connect to lcirun at LCIRUN_ADDR=" +
                             address + ": " + std::strerror(error));
  }
  // Every request waits for its reply: send each line at once.
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

class lcirun_bootstrap_t final : public bootstrap_t {
 public:
  explicit lcirun_bootstrap_t(const lcirun_env_t& env)
      : channel_(connect_to(env.address),
                 "lcirun (LCIRUN_ADDR=" + env.address + ")"),
        rank_me_(env.rank),
        rank_n_(env.size) {
    LCI_ASSERT(rank_me_ >= 0 && rank_me_ < rank_n_, "rank outside the job");
    call("init " + std::to_string(rank_me_) + " " + std::to_string(rank_n_) +
         " " + env.job);
  }

  ~lcirun_bootstrap_t() override {
    try {
      call("finalize");
    } catch (const std::exception& error) {
      std::fprintf(stderr, "lci bootstrap lcirun: finalize failed: %s\n",
                   error.what());
    }
  }

  bootstrap_kind_t kind() const override { return bootstrap_kind_t::lcirun; }
  int rank_me() const override { return rank_me_; }
  int rank_n() const override { return rank_n_; }

  void put(const std::string& key, const void* value,
           std::size_t size) override {
    check_key(key);
    check_value_size(size);
    call("put " + key + " " + hex_encode(value, size));
  }

  void fence() override { call("fence"); }

  std::vector<std::byte> get(int rank, const std::string& key) override {
    check_key(key);
    check_rank(rank, rank_n_);
    const std::string reply = call("get " + std::to_string(rank) + " " + key);
    if (reply == "missing") {
      throw std::runtime_error(
          "bootstrap lcirun: rank " + std::to_string(rank) +
          " put no value under key '" + key + "' before the last fence");
    }
    constexpr std::string_view prefix = "value ";
    if (reply.compare(0, prefix.size(), prefix) != 0) {
      throw std::runtime_error("unexpected reply from lcirun to get: " +
                               reply.substr(0, 80));
    }
    return hex_decode(std::string_view(reply).substr(prefix.size()));
  }

  void barrier() override { call("barrier"); }

 private:
  // Sends one request; returns the reply unless it is an error.
  std::string call(const std::string& request) {
    channel_.write_all(request + "\n");
    std::string reply = channel_.read_line(lcirun_line_length_max);
    constexpr std::string_view error_prefix = "error ";
    if (reply.compare(0, error_prefix.size(), error_prefix) == 0) {
      throw std::runtime_error("lcirun refused '" + request.substr(0, 80) +
                               "': " + reply.substr(error_prefix.size()));
    }
    const std::string_view verb =
        std::string_view(request).substr(0, request.find(' '));
    if (verb != "get" && reply != "ok") {
      throw std::runtime_error("unexpected reply from lcirun to " +
                               std::string(verb) + ": " + reply.substr(0, 80));
    }
    return reply;
  }

  fd_channel_t channel_;
  int rank_me_;
  int rank_n_;
};

}  // namespace

std::unique_ptr<bootstrap_t> open_lcirun(const lcirun_env_t& env) {
  return std::make_unique<lcirun_bootstrap_t>(env);
}

}  // namespace lci::bootstrap::detail
