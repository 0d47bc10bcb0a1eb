#include "backends/backend_registry.hpp"

#include <algorithm>
#include <exception>
#include <stdexcept>

#include "lci/util/assert.hpp"

namespace lci::backend {

namespace {

const char* const no_network = "lci: no network for this process: ";

}  // namespace

void registry_t::add(const backend_entry_t& entry) {
  if (entry.name == nullptr || *entry.name == '\0' || entry.open == nullptr) {
    throw std::logic_error("registry_t::add: a backend entry needs a name and an open function");
  }
  if (find(entry.name) != nullptr) {
    throw std::logic_error(std::string("registry_t::add: backend \"") + entry.name +
                           "\" is registered twice");
  }
  // Stable: equal priorities keep the order of add().
  const auto after = std::find_if(entries_.begin(), entries_.end(), [&](const backend_entry_t& e) {
    return e.priority < entry.priority;
  });
  entries_.insert(after, entry);
}

const backend_entry_t* registry_t::find(const std::string& name) const {
  for (const backend_entry_t& entry : entries_) {
    if (name == entry.name) return &entry;
  }
  return nullptr;
}

std::string registry_t::names() const {
  if (entries_.empty()) return "none";
  std::string names;
  for (const backend_entry_t& entry : entries_) {
    if (!names.empty()) names += ", ";
    names += entry.name;
  }
  return names;
}

std::unique_ptr<net_context_t> registry_t::open(const std::string& name,
                                                const net_context_args_t& args) const {
  LCI_ASSERT(args.bootstrap != nullptr, "opening a network without a bootstrap");
  if (entries_.empty()) {
    throw std::runtime_error(
        std::string(no_network) +
        "run the program under the simulator (lci::sim::run_program or run_ranks; an "
        "example's <name>_sim), or build with --config=ofi (libfabric) and start it under a "
        "launcher (tools/lcirun -n N prog)");
  }
  if (!name.empty()) {
    const backend_entry_t* entry = find(name);
    if (entry == nullptr) {
      throw std::runtime_error(std::string(no_network) + "backend \"" + name +
                               "\" is not a network backend of this build (it has: " + names() +
                               ")");
    }
    return entry->open(args);
  }
  if (entries_.size() == 1) return entries_.front().open(args);
  std::string failures;
  for (const backend_entry_t& entry : entries_) {
    try {
      return entry.open(args);
    } catch (const std::exception& error) {
      failures += std::string(failures.empty() ? "" : "; ") + entry.name + ": " + error.what();
    }
  }
  throw std::runtime_error(std::string(no_network) + "no backend of this build opened (" +
                           failures + ")");
}

}  // namespace lci::backend
