// The PMI-2 client. It starts with the PMI-1 line "cmd=init pmi_version=2
// pmi_subversion=0" on PMI_FD; once the server accepts, every message is a
// frame: a 6-character decimal length, then "cmd=<name>;key=value;...;" with
// ';' inside a value doubled (wire.hpp: pmi2_format). Exchanges:
//   fullinit / fullinit-response   rank, size (we send pmirank, pmijobid)
//   kvs-put / kvs-put-response, kvs-get / kvs-get-response (found=TRUE|FALSE)
//   kvs-fence / kvs-fence-response  collective; makes earlier puts visible
//   finalize / finalize-response
// Every response carries rc (0 = success).
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <utility>

#include "lci/bootstrap/detail/backends.hpp"
#include "lci/bootstrap/detail/pmi_kvs.hpp"

namespace lci::bootstrap::detail {

namespace {

// The protocol's key and value limits (PMI2_MAX_KEYLEN, PMI2_MAX_VALLEN),
// less one character for a server that stores them as C strings.
constexpr std::size_t pmi2_key_length_max = 64 - 1;
constexpr std::size_t pmi2_value_length_max = 1024 - 1;

class pmi2_bootstrap_t final : public pmi_kvs_bootstrap_t {
 public:
  // The server has accepted PMI-2 on channel (pmi_init_handshake).
  pmi2_bootstrap_t(std::unique_ptr<fd_channel_t> channel, const pmi_env_t& env)
      : pmi_kvs_bootstrap_t(std::move(channel)) {
    pmi_message_t request{"fullinit", {}};
    if (!env.jobid.empty()) request.fields.emplace_back("pmijobid", env.jobid);
    const int pmirank = env.id >= 0 ? env.id : env.rank;
    if (pmirank >= 0) {
      request.fields.emplace_back("pmirank", std::to_string(pmirank));
    }
    request.fields.emplace_back("threaded", "FALSE");
    const pmi_message_t reply = call(request, "fullinit-response");
    set_job(reply.get_int("rank"), reply.get_int("size"), pmi2_key_length_max,
            pmi2_value_length_max);
  }

  ~pmi2_bootstrap_t() override {
    try {
      call({"finalize", {}}, "finalize-response");
    } catch (const std::exception& error) {
      std::fprintf(stderr, "lci bootstrap pmi2: finalize failed: %s\n",
                   error.what());
    }
  }

  bootstrap_kind_t kind() const override { return bootstrap_kind_t::pmi2; }
  void fence() override { call({"kvs-fence", {}}, "kvs-fence-response"); }
  // PMI-2 has no barrier of its own; a fence is a collective every rank
  // must enter, which is all a barrier promises.
  void barrier() override { fence(); }

 private:
  pmi_message_t call(const pmi_message_t& request,
                     std::string_view expected_cmd) {
    channel_->write_all(pmi2_format(request));
    const std::size_t length =
        pmi2_parse_length(channel_->read_exact(pmi2_length_field_size));
    pmi_message_t reply = pmi2_parse(channel_->read_exact(length));
    pmi_check_response(reply, expected_cmd);
    return reply;
  }

  void kvs_put(const std::string& name, const std::string& value) override {
    call({"kvs-put", {{"key", name}, {"value", value}}}, "kvs-put-response");
  }

  std::optional<std::string> kvs_get(const std::string& name) override {
    const pmi_message_t reply =
        call({"kvs-get", {{"key", name}}}, "kvs-get-response");
    const std::string& found = reply.get("found");
    if (found == "FALSE") return std::nullopt;
    if (found != "TRUE") {
      throw std::runtime_error("PMI-2 kvs-get-response with found=" + found);
    }
    return reply.get("value");
  }
};

}  // namespace

std::unique_ptr<bootstrap_t> open_pmi2(const pmi_env_t& env,
                                       bool fallback_to_pmi1) {
  std::unique_ptr<fd_channel_t> channel = open_pmi_channel(env.fd);
  if (pmi_init_handshake(*channel, 2, 0)) {
    return std::make_unique<pmi2_bootstrap_t>(std::move(channel), env);
  }
  if (!fallback_to_pmi1) {
    throw std::runtime_error(
        "the PMI server on PMI_FD=" + std::to_string(env.fd) +
        " refused PMI-2.0, and pmi2 was asked for "
        "explicitly (LCI_BOOTSTRAP=pmi1 selects PMI-1)");
  }
  return open_pmi1_on(std::move(channel), env);
}

}  // namespace lci::bootstrap::detail
