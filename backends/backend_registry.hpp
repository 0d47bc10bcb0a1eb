// registry_t: the real network backends a process can open, by name, so
// that the runtime opens one without naming it (it asks for "ofi", or for
// the best one, by attribute). Each backend describes itself with a
// backend_entry_t (backends/<name>/<name>_backend.hpp); which of them a
// build holds is the list in linked_backends.hpp. The simulator is not in
// it: it is no process's network, its harness builds a context per rank.
//
// Thread safety: add() before the registry is shared (linked_backends()
//                fills its own once); the const methods from any thread.
// Blocking:      open() as the backend's context creation: collective, it
//                waits for every rank of the job.
// Ownership:     entries are plain data copied in; open() returns the new
//                context, which borrows args.bootstrap.
// Allocation:    add() and open().
// Errors:        open() throws std::runtime_error beginning "lci: no network
//                for this process: " when no backend is compiled in or the
//                one named is not; a backend's own failure to open comes
//                through unchanged.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "lci/bootstrap/bootstrap.hpp"

namespace lci::backend {

// What a backend needs to open the network context of this process.
struct net_context_args_t {
  // The process's bootstrap (rank, size, key-value exchange); the context
  // borrows it for its whole life.
  bootstrap::bootstrap_t* bootstrap = nullptr;
  // The backend's own choice of transport ("shm", "tcp;ofi_rxm" for ofi's
  // libfabric providers); "": the backend's default.
  std::string provider_name;
  // The network device or interface ("eth0", an address); "": the default.
  std::string device_name;
};

using open_net_context_fn_t = std::unique_ptr<net_context_t> (*)(const net_context_args_t& args);

// How a backend describes itself.
struct backend_entry_t {
  const char* name = nullptr;  // as attr_backend_t spells it ("ofi", "ibv")
  int priority = 0;            // unnamed choice: the highest that opens
  open_net_context_fn_t open = nullptr;  // throws when it cannot open
  // The queue depths a device asks for when the runtime leaves them 0 (the
  // network may grant fewer): get_g_default_attr reports them before any
  // network is open.
  std::size_t net_max_sends_default = 0;
  std::size_t net_max_recvs_default = 0;
  std::size_t net_max_cqes_default = 0;
};

class registry_t {
 public:
  // Throws std::logic_error for an entry without name or open function, or
  // a name already registered.
  void add(const backend_entry_t& entry);

  bool empty() const { return entries_.empty(); }
  // nullptr when no entry has that name.
  const backend_entry_t* find(const std::string& name) const;
  // The entries, highest priority first (equal: in order of add()).
  const std::vector<backend_entry_t>& entries() const { return entries_; }
  // "ofi, ibv" in entries() order; "none" when empty.
  std::string names() const;

  // The context of backend `name`, or for "" of the highest-priority entry
  // that opens (when every one fails: one alone rethrows its error, several
  // throw one error listing each). A backend must fail before its first
  // collective call when it cannot open, so every rank moves on to the same
  // next entry.
  std::unique_ptr<net_context_t> open(const std::string& name,
                                      const net_context_args_t& args) const;

 private:
  std::vector<backend_entry_t> entries_;
};

}  // namespace lci::backend
