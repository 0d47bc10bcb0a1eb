#include "sim/sim_faults.hpp"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "lci/util/assert.hpp"

namespace lci::sim {

const char* get_fault_name(fault_kind_t kind) {
  switch (kind) {
    case fault_kind_t::send_queue_full: return "send_queue_full";
    case fault_kind_t::no_recv_buffer: return "no_recv_buffer";
    case fault_kind_t::cq_pressure: return "cq_pressure";
    case fault_kind_t::lock_busy: return "lock_busy";
    case fault_kind_t::reorder: return "reorder";
    case fault_kind_t::delay_spike: return "delay_spike";
    case fault_kind_t::registration_failure: return "registration_failure";
    case fault_kind_t::rank_crash: return "rank_crash";
    case fault_kind_t::preempt: return "preempt";
  }
  return "unknown";
}

bool fault_options_t::any() const {
  for (double value : rates) {
    if (value > 0.0) return true;
  }
  return false;
}

void apply_fault_env(fault_options_t* options) {
  LCI_ASSERT(options != nullptr, "apply_fault_env needs options");
  for (std::size_t k = 0; k < fault_kinds_count; ++k) {
    std::string env_name = "LCI_SIM_FAULT_";
    for (const char* c = get_fault_name(static_cast<fault_kind_t>(k)); *c; ++c) {
      env_name += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
    }
    const char* text = std::getenv(env_name.c_str());
    if (text == nullptr || *text == '\0') continue;
    char* end = nullptr;
    errno = 0;
    const double value = std::strtod(text, &end);
    const bool valid = errno == 0 && end != text && *end == '\0' && value >= 0.0 &&
                       value <= 1.0;
    if (!valid) {
      std::fprintf(stderr, "%s=\"%s\" is not a probability in [0, 1]\n",
                   env_name.c_str(), text);
    }
    LCI_ASSERT(valid, "malformed LCI_SIM_FAULT_<NAME> value");
    options->rates[k] = value;
  }
}

std::string describe_faults(const fault_options_t& options) {
  std::string text;
  for (std::size_t k = 0; k < fault_kinds_count; ++k) {
    if (options.rates[k] <= 0.0) continue;
    char value[32];
    std::snprintf(value, sizeof(value), "=%g", options.rates[k]);
    if (!text.empty()) text += ' ';
    text += get_fault_name(static_cast<fault_kind_t>(k));
    text += value;
  }
  return text.empty() ? "none" : text;
}

}  // namespace lci::sim
