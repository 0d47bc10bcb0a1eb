#include "lci/runtime/rdv_table.hpp"

#include <stdexcept>
#include <string>

#include "lci/wire/immediate.hpp"

namespace lci::detail {

std::uint32_t rdv_table_t::add(request_t* request) {
  util::spinlock_guard_t guard(lock_);
  if (!free_.empty()) {
    const std::uint32_t id = free_.back();
    free_.pop_back();
    slots_[id] = request;
    return id;
  }
  if (slots_.size() > imm_value_max) {
    throw std::length_error("lci: more than 2^28 rendezvous receives in flight");
  }
  slots_.push_back(request);
  return static_cast<std::uint32_t>(slots_.size() - 1);
}

request_t* rdv_table_t::slot_in_use(std::uint32_t id) const {
  // The id comes from a peer: the slot is read checked (at()), so that a
  // bound wrong by one here throws rather than read past the table.
  if (id >= slots_.size() || slots_.at(id) == nullptr) {
    throw std::logic_error("lci: rendezvous id " + std::to_string(id) + " is not in use");
  }
  return slots_[id];
}

request_t* rdv_table_t::at(std::uint32_t id) {
  util::spinlock_guard_t guard(lock_);
  return slot_in_use(id);
}

request_t* rdv_table_t::take(std::uint32_t id) {
  util::spinlock_guard_t guard(lock_);
  request_t* request = slot_in_use(id);
  slots_[id] = nullptr;
  free_.push_back(id);
  return request;
}

}  // namespace lci::detail
