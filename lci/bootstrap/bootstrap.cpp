// Backend detection from the environment and the argument checks shared by
// all backends. The rules are listed in bootstrap.hpp and docs/bootstrap.md.
#include "lci/bootstrap/bootstrap.hpp"

#include <fcntl.h>

#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "lci/bootstrap/detail/backends.hpp"
#include "lci/util/assert.hpp"

namespace lci::bootstrap {

namespace {

using detail::lcirun_env_t;
using detail::pmi_env_t;

// Any of them marks a process started by tools/lcirun; all are required.
constexpr std::initializer_list<const char*> lcirun_variables = {
    "LCIRUN_ADDR", "LCIRUN_RANK", "LCIRUN_SIZE", "LCIRUN_JOB"};

const char* env(const char* name) { return std::getenv(name); }

// "NAME=value NAME=(unset) ..." for error messages.
std::string describe(std::initializer_list<const char*> names) {
  std::string text;
  for (const char* name : names) {
    const char* value = env(name);
    if (!text.empty()) text += " ";
    text += std::string(name) + "=" + (value ? value : "(unset)");
  }
  return text;
}

bool any_set(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (env(name) != nullptr) return true;
  }
  return false;
}

// The variable as an integer >= minimum; -1 when unset.
int env_int(const char* name, int minimum) {
  const char* text = env(name);
  if (text == nullptr) return -1;
  const std::string_view view(text);
  int value = 0;
  const auto [end, error] =
      std::from_chars(view.data(), view.data() + view.size(), value);
  if (view.empty() || error != std::errc() ||
      end != view.data() + view.size() || value < minimum) {
    throw std::runtime_error(
        std::string(name) + "=" + text +
        " is not an integer >= " + std::to_string(minimum));
  }
  return value;
}

pmi_env_t read_pmi_env() {
  pmi_env_t pmi;
  pmi.fd = env_int("PMI_FD", 0);
  LCI_ASSERT(pmi.fd >= 0, "read_pmi_env without PMI_FD");
  if (::fcntl(pmi.fd, F_GETFD) < 0) {
    throw std::runtime_error(describe({"PMI_FD"}) +
                             " is not an open file descriptor of this "
                             "process");
  }
  pmi.rank = env_int("PMI_RANK", 0);
  pmi.size = env_int("PMI_SIZE", 1);
  pmi.id = env_int("PMI_ID", 0);
  if (pmi.rank >= 0 && pmi.size > 0 && pmi.rank >= pmi.size) {
    throw std::runtime_error(describe({"PMI_RANK", "PMI_SIZE"}) +
                             ": rank outside the job");
  }
  if (const char* jobid = env("PMI_JOBID")) pmi.jobid = jobid;
  return pmi;
}

lcirun_env_t read_lcirun_env() {
  std::string missing;
  for (const char* name : lcirun_variables) {
    if (env(name) == nullptr) {
      missing += std::string(missing.empty() ? "" : ", ") + name;
    }
  }
  if (!missing.empty()) {
    throw std::runtime_error(
        "partial lcirun environment (" + describe(lcirun_variables) +
        "): " + missing + " missing; start the program with tools/lcirun -n N");
  }
  lcirun_env_t lcirun;
  lcirun.address = env("LCIRUN_ADDR");
  lcirun.rank = env_int("LCIRUN_RANK", 0);
  lcirun.size = env_int("LCIRUN_SIZE", 1);
  lcirun.job = env("LCIRUN_JOB");
  if (lcirun.rank >= lcirun.size) {
    throw std::runtime_error(describe({"LCIRUN_RANK", "LCIRUN_SIZE"}) +
                             ": rank outside the job");
  }
  if (lcirun.job.empty() || lcirun.job.find(' ') != std::string::npos) {
    throw std::runtime_error(describe({"LCIRUN_JOB"}) +
                             " is not a token of non-space characters");
  }
  return lcirun;
}

std::unique_ptr<bootstrap_t> open_pmix_checked() {
  const std::string variables =
      describe({"LCI_BOOTSTRAP", "PMIX_RANK", "PMIX_NAMESPACE"});
#if defined(LCI_BOOTSTRAP_PMIX)
  if (!any_set({"PMIX_RANK", "PMIX_NAMESPACE"})) {
    throw std::runtime_error(
        variables +
        ": the pmix bootstrap needs PMIX_RANK and "
        "PMIX_NAMESPACE; start the program under a PMIx launcher "
        "such as mpirun.openmpi");
  }
  return detail::open_pmix();
#else
  throw std::runtime_error(
      variables +
      ": the pmix bootstrap is needed, but PMIx support is not "
      "compiled in; build with --config=pmix, or set "
      "LCI_BOOTSTRAP=local to run as a single process");
#endif
}

pmi_env_t read_pmi_env_for(const char* kind) {
  if (env("PMI_FD") == nullptr) {
    throw std::runtime_error(
        describe({"LCI_BOOTSTRAP", "PMI_FD", "PMI_RANK", "PMI_SIZE"}) +
        ": the " + kind +
        " bootstrap needs PMI_FD, the socket to a PMI server; start the "
        "program under a PMI launcher such as mpiexec.hydra");
  }
  return read_pmi_env();
}

std::optional<bootstrap_kind_t> parse_kind(std::string_view name) {
  for (const auto kind :
       {bootstrap_kind_t::local, bootstrap_kind_t::pmix, bootstrap_kind_t::pmi1,
        bootstrap_kind_t::pmi2, bootstrap_kind_t::lcirun}) {
    if (name == get_bootstrap_kind_str(kind)) return kind;
  }
  return std::nullopt;
}

}  // namespace

bootstrap_t::~bootstrap_t() = default;

const char* get_bootstrap_kind_str(bootstrap_kind_t kind) {
  switch (kind) {
    case bootstrap_kind_t::local:
      return "local";
    case bootstrap_kind_t::pmix:
      return "pmix";
    case bootstrap_kind_t::pmi1:
      return "pmi1";
    case bootstrap_kind_t::pmi2:
      return "pmi2";
    case bootstrap_kind_t::lcirun:
      return "lcirun";
  }
  LCI_ASSERT(false, "unknown bootstrap_kind_t");
  return "unknown";
}

void check_key(const std::string& key) {
  if (key.empty() || key.size() > key_length_max) {
    throw std::invalid_argument(
        "bootstrap key '" + key + "' has " + std::to_string(key.size()) +
        " characters; keys have 1 to " + std::to_string(key_length_max));
  }
  for (char c : key) {
    const bool allowed = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                         (c >= '0' && c <= '9') || c == '_';
    if (!allowed) {
      throw std::invalid_argument("bootstrap key '" + key +
                                  "' holds a character outside "
                                  "[A-Za-z0-9_]");
    }
  }
}

void check_value_size(std::size_t size_bytes) {
  if (size_bytes > value_size_bytes_max) {
    throw std::invalid_argument(
        "bootstrap value of " + std::to_string(size_bytes) +
        " bytes exceeds the limit of " + std::to_string(value_size_bytes_max));
  }
}

void check_rank(int rank, int rank_n) {
  if (rank < 0 || rank >= rank_n) {
    throw std::invalid_argument("bootstrap rank " + std::to_string(rank) +
                                " outside 0.." + std::to_string(rank_n - 1));
  }
}

std::unique_ptr<bootstrap_t> open_bootstrap(bootstrap_kind_t kind) {
  switch (kind) {
    case bootstrap_kind_t::local:
      return detail::open_local();
    case bootstrap_kind_t::pmix:
      return open_pmix_checked();
    case bootstrap_kind_t::pmi1:
      return detail::open_pmi1(read_pmi_env_for("pmi1"));
    case bootstrap_kind_t::pmi2:
      return detail::open_pmi2(read_pmi_env_for("pmi2"),
                               /*fallback_to_pmi1=*/false);
    case bootstrap_kind_t::lcirun:
      return detail::open_lcirun(read_lcirun_env());
  }
  LCI_ASSERT(false, "unknown bootstrap_kind_t");
  return nullptr;
}

std::unique_ptr<bootstrap_t> open_bootstrap() {
  const char* requested = env("LCI_BOOTSTRAP");
  if (requested != nullptr && *requested != '\0') {
    const std::optional<bootstrap_kind_t> kind = parse_kind(requested);
    if (!kind) {
      throw std::runtime_error(std::string("LCI_BOOTSTRAP=") + requested +
                               " names no bootstrap; use local, pmix, pmi1, "
                               "pmi2 or lcirun (or unset it to detect)");
    }
    return open_bootstrap(*kind);
  }
  if (any_set(lcirun_variables)) {
    return detail::open_lcirun(read_lcirun_env());
  }
  if (any_set({"PMIX_RANK", "PMIX_NAMESPACE"})) {
    return open_pmix_checked();
  }
  if (env("PMI_FD") != nullptr) {
    // hydra speaks both versions but hints at neither: PMI-1 unless the
    // launcher marks itself as PMI-2 (Slurm's pmi2 plugin sets PMI_JOBID).
    const char* version = env("PMI_VERSION");
    const bool pmi2_hinted =
        (version != nullptr && std::string_view(version) == "2") ||
        env("PMI_JOBID") != nullptr;
    if (pmi2_hinted) {
      return detail::open_pmi2(read_pmi_env(), /*fallback_to_pmi1=*/true);
    }
    return detail::open_pmi1(read_pmi_env());
  }
  if (any_set({"PMI_RANK", "PMI_SIZE", "PMI_ID", "PMI_PORT"})) {
    throw std::runtime_error(
        describe({"PMI_RANK", "PMI_SIZE", "PMI_ID", "PMI_PORT", "PMI_FD"}) +
        ": a PMI launcher started this process but passed no PMI_FD, the "
        "socket to its server (servers reached through PMI_PORT are not "
        "supported); set LCI_BOOTSTRAP=local to run as a single process");
  }
  return detail::open_local();
}

}  // namespace lci::bootstrap
