// pmi_kvs_bootstrap_t: what the PMI-1 and PMI-2 clients share: a socket to
// the PMI server, the version handshake, and put/get of bootstrap values in
// the server's single key-value space, where each value is split into chunks
// under per-rank names (wire.hpp: kvs_key, kvs_value_chunks). A derived
// client supplies the wire format of one put and one get.
//
// Thread safety: one thread at a time (bootstrap_t).
// Blocking:      every call waits for the server's reply.
// Ownership:     owns the channel (and so the socket).
// Allocation:    per call: the request and reply strings.
// Limits:        key_length_max_ / value_length_max_ are the server's, set
//                by the derived constructor before any put or get.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lci/bootstrap/bootstrap.hpp"
#include "lci/bootstrap/detail/wire.hpp"

namespace lci::bootstrap::detail {

// Longest PMI-1 line accepted from a server: a value of at most a few KiB
// plus the command and its fields.
inline constexpr std::size_t pmi1_line_length_max = 16 * 1024;

// The channel to the PMI server on the inherited socket fd (PMI_FD).
std::unique_ptr<fd_channel_t> open_pmi_channel(int fd);

// Sends "cmd=init pmi_version=<version> pmi_subversion=<subversion>" (the
// PMI-1 line format, which PMI-2 also starts with) and returns whether the
// server accepted exactly that version. Throws on a malformed reply.
bool pmi_init_handshake(fd_channel_t& channel, int version, int subversion);

class pmi_kvs_bootstrap_t : public bootstrap_t {
 public:
  int rank_me() const override { return rank_me_; }
  int rank_n() const override { return rank_n_; }
  void put(const std::string& key, const void* value,
           std::size_t size) override;
  std::vector<std::byte> get(int rank, const std::string& key) override;

 protected:
  explicit pmi_kvs_bootstrap_t(std::unique_ptr<fd_channel_t> channel);

  // One key of the server's space; kvs_get returns nullopt when the server
  // has no such key.
  virtual void kvs_put(const std::string& name, const std::string& value) = 0;
  virtual std::optional<std::string> kvs_get(const std::string& name) = 0;

  // Sets what the handshake told; checks the server's limits are usable.
  void set_job(int rank_me, int rank_n, std::size_t key_length_max,
               std::size_t value_length_max);

  std::unique_ptr<fd_channel_t> channel_;

 private:
  int rank_me_ = -1;
  int rank_n_ = 0;
  std::size_t key_length_max_ = 0;
  std::size_t value_length_max_ = 0;
};

}  // namespace lci::bootstrap::detail
