#include "lci/bootstrap/detail/pmi_kvs.hpp"

#include <stdexcept>
#include <utility>

#include "lci/util/assert.hpp"

namespace lci::bootstrap::detail {

std::unique_ptr<fd_channel_t> open_pmi_channel(int fd) {
  LCI_ASSERT(fd >= 0, "PMI client without PMI_FD");
  return std::make_unique<fd_channel_t>(
      fd, "the PMI server (PMI_FD=" + std::to_string(fd) + ")");
}

bool pmi_init_handshake(fd_channel_t& channel, int version, int subversion) {
  LCI_ASSERT(version == 1 || version == 2, "unknown PMI version");
  channel.write_all(
      pmi1_format({"init",
                   {{"pmi_version", std::to_string(version)},
                    {"pmi_subversion", std::to_string(subversion)}}}));
  const pmi_message_t reply =
      pmi1_parse(channel.read_line(pmi1_line_length_max));
  if (reply.cmd != "response_to_init") {
    pmi_check_response(reply, "response_to_init");  // throws, naming both
  }
  const std::string* rc = reply.find("rc");
  if (rc != nullptr && *rc != "0") return false;
  return reply.get_int("pmi_version") == version &&
         reply.get_int("pmi_subversion") == subversion;
}

pmi_kvs_bootstrap_t::pmi_kvs_bootstrap_t(std::unique_ptr<fd_channel_t> channel)
    : channel_(std::move(channel)) {
  LCI_ASSERT(channel_ != nullptr, "PMI client without a channel");
}

void pmi_kvs_bootstrap_t::set_job(int rank_me, int rank_n,
                                  std::size_t key_length_max,
                                  std::size_t value_length_max) {
  if (rank_n <= 0 || rank_me < 0 || rank_me >= rank_n) {
    throw std::runtime_error("PMI server gave rank " + std::to_string(rank_me) +
                             " of " + std::to_string(rank_n));
  }
  if (key_length_max < kvs_key_length_min ||
      value_length_max < kvs_value_length_min) {
    throw std::runtime_error(
        "PMI server keeps keys of " + std::to_string(key_length_max) +
        " and values of " + std::to_string(value_length_max) +
        " characters; the bootstrap needs at least " +
        std::to_string(kvs_key_length_min) + " and " +
        std::to_string(kvs_value_length_min));
  }
  rank_me_ = rank_me;
  rank_n_ = rank_n;
  key_length_max_ = key_length_max;
  value_length_max_ = value_length_max;
}

void pmi_kvs_bootstrap_t::put(const std::string& key, const void* value,
                              std::size_t size) {
  check_key(key);
  check_value_size(size);
  LCI_ASSERT(rank_n_ > 0, "put before the handshake set the job");
  const std::vector<std::string> chunks =
      kvs_value_chunks(value, size, value_length_max_);
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    kvs_put(kvs_key(key, rank_me_, i, key_length_max_), chunks[i]);
  }
}

std::vector<std::byte> pmi_kvs_bootstrap_t::get(int rank,
                                                const std::string& key) {
  check_key(key);
  check_rank(rank, rank_n_);
  std::optional<std::string> first =
      kvs_get(kvs_key(key, rank, 0, key_length_max_));
  if (!first) {
    throw std::runtime_error(
        std::string("bootstrap ") + get_bootstrap_kind_str(kind()) + ": rank " +
        std::to_string(rank) + " put no value under key '" + key +
        "' before the last fence");
  }
  const std::size_t chunk_count = kvs_chunk_count(*first, value_length_max_);
  std::vector<std::string> chunks{std::move(*first)};
  for (std::size_t i = 1; i < chunk_count; ++i) {
    std::optional<std::string> chunk =
        kvs_get(kvs_key(key, rank, i, key_length_max_));
    if (!chunk) {
      throw std::runtime_error(
          std::string("bootstrap ") + get_bootstrap_kind_str(kind()) +
          ": chunk " + std::to_string(i) + " of " +
          std::to_string(chunk_count) + " of the value rank " +
          std::to_string(rank) + " put under key '" + key + "' is missing");
    }
    chunks.push_back(std::move(*chunk));
  }
  return kvs_value_join(chunks);
}

}  // namespace lci::bootstrap::detail
