// The local backend: a process started without a launcher is rank 0 of 1.
// Its exchange keeps the contract of the others (a value becomes readable at
// the fence after its put), so a program that forgets a fence fails here
// too, not only on a cluster.
#include <map>
#include <stdexcept>

#include "lci/bootstrap/detail/backends.hpp"
#include "lci/util/assert.hpp"

namespace lci::bootstrap::detail {

namespace {

class local_bootstrap_t final : public bootstrap_t {
 public:
  bootstrap_kind_t kind() const override { return bootstrap_kind_t::local; }
  int rank_me() const override { return 0; }
  int rank_n() const override { return 1; }

  void put(const std::string& key, const void* value,
           std::size_t size) override {
    check_key(key);
    check_value_size(size);
    const auto* bytes = static_cast<const std::byte*>(value);
    pending_[key].assign(bytes, bytes + size);
  }

  void fence() override {
    for (auto& [key, value] : pending_) visible_[key] = std::move(value);
    pending_.clear();
  }

  std::vector<std::byte> get(int rank, const std::string& key) override {
    check_key(key);
    check_rank(rank, 1);
    const auto found = visible_.find(key);
    if (found == visible_.end()) {
      throw std::runtime_error(
          "bootstrap local: rank 0 put no value under "
          "key '" +
          key + "' before the last fence");
    }
    return found->second;
  }

  void barrier() override {}

 private:
  std::map<std::string, std::vector<std::byte>> pending_;  // since the fence
  std::map<std::string, std::vector<std::byte>> visible_;
};

}  // namespace

std::unique_ptr<bootstrap_t> open_local() {
  return std::make_unique<local_bootstrap_t>();
}

}  // namespace lci::bootstrap::detail
