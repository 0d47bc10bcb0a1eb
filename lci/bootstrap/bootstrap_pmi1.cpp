// The PMI-1 client: the line protocol hydra's mpiexec (and MPICH's simple
// PMI) serve on the socket named by PMI_FD. Requests and replies are single
// lines of space-separated key=value tokens:
//   init / response_to_init        version handshake
//   get_maxes / maxes              the server's key and value buffer sizes
//   get_my_kvsname / my_kvsname    the job's key-value space
//   put / put_result, get / get_result
//   barrier_in / barrier_out       the only collective; it also makes every
//                                  put before it visible (fence)
//   finalize / finalize_ack
// Rank and size are not on the wire: PMI_RANK and PMI_SIZE carry them.
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <utility>

#include "lci/bootstrap/detail/backends.hpp"
#include "lci/bootstrap/detail/pmi_kvs.hpp"

namespace lci::bootstrap::detail {

namespace {

// Characters a server buffer of buffer_size holds (0 for a nonsense size,
// which set_job refuses).
std::size_t buffer_length(int buffer_size) {
  return buffer_size > 0 ? static_cast<std::size_t>(buffer_size) - 1 : 0;
}

class pmi1_bootstrap_t final : public pmi_kvs_bootstrap_t {
 public:
  pmi1_bootstrap_t(std::unique_ptr<fd_channel_t> channel, const pmi_env_t& env)
      : pmi_kvs_bootstrap_t(std::move(channel)) {
    if (env.rank < 0 || env.size <= 0) {
      throw std::runtime_error(
          "PMI-1 needs PMI_RANK and PMI_SIZE in the environment (PMI_FD=" +
          std::to_string(env.fd) + " is set)");
    }
    if (!pmi_init_handshake(*channel_, 1, 1)) {
      throw std::runtime_error("the PMI server on PMI_FD=" +
                               std::to_string(env.fd) + " refused PMI-1.1");
    }
    const pmi_message_t maxes = call({"get_maxes", {}}, "maxes");
    kvsname_ = call({"get_my_kvsname", {}}, "my_kvsname").get("kvsname");
    // The server's limits are C buffer sizes that include the terminating
    // NUL: hydra keeps keys of 63 and values of 1023 characters of its
    // keylen_max=64 and vallen_max=1024, truncating longer ones silently.
    set_job(env.rank, env.size, buffer_length(maxes.get_int("keylen_max")),
            buffer_length(maxes.get_int("vallen_max")));
  }

  ~pmi1_bootstrap_t() override {
    try {
      call({"finalize", {}}, "finalize_ack");
    } catch (const std::exception& error) {
      std::fprintf(stderr, "lci bootstrap pmi1: finalize failed: %s\n",
                   error.what());
    }
  }

  bootstrap_kind_t kind() const override { return bootstrap_kind_t::pmi1; }
  // A barrier completes only after every rank's earlier puts completed at
  // the server, so it is also the fence.
  void fence() override { barrier(); }
  void barrier() override { call({"barrier_in", {}}, "barrier_out"); }

 private:
  // One request and its reply, as it came.
  pmi_message_t transact(const pmi_message_t& request) {
    channel_->write_all(pmi1_format(request));
    return pmi1_parse(channel_->read_line(pmi1_line_length_max));
  }

  // One request whose reply must be expected_cmd with rc=0 (if any).
  pmi_message_t call(const pmi_message_t& request,
                     std::string_view expected_cmd) {
    pmi_message_t reply = transact(request);
    pmi_check_response(reply, expected_cmd);
    return reply;
  }

  void kvs_put(const std::string& name, const std::string& value) override {
    call({"put", {{"kvsname", kvsname_}, {"key", name}, {"value", value}}},
         "put_result");
  }

  std::optional<std::string> kvs_get(const std::string& name) override {
    const pmi_message_t reply =
        transact({"get", {{"kvsname", kvsname_}, {"key", name}}});
    if (reply.cmd != "get_result") pmi_check_response(reply, "get_result");
    // PMI-1 has no separate "not found": any rc other than 0 means the key
    // is absent (hydra: rc=-1 msg=key_<name>_not_found).
    const std::string* rc = reply.find("rc");
    if (rc != nullptr && *rc != "0") return std::nullopt;
    return reply.get("value");
  }

  std::string kvsname_;
};

}  // namespace

std::unique_ptr<bootstrap_t> open_pmi1_on(std::unique_ptr<fd_channel_t> channel,
                                          const pmi_env_t& env) {
  return std::make_unique<pmi1_bootstrap_t>(std::move(channel), env);
}

std::unique_ptr<bootstrap_t> open_pmi1(const pmi_env_t& env) {
  return open_pmi1_on(open_pmi_channel(env.fd), env);
}

}  // namespace lci::bootstrap::detail
