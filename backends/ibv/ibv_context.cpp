#include "backends/ibv/ibv_context.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "backends/ibv/ibv_device.hpp"
#include "lci/util/assert.hpp"

namespace lci::backend::ibv {
namespace {

[[noreturn]] void throw_open(const verbs_t& verbs, const std::string& why) {
  throw std::runtime_error(std::string("ibv backend (") + verbs.get_name() + "): " + why);
}

std::string errno_text(int error) { return error != 0 ? std::strerror(error) : "unknown error"; }

}  // namespace

ibv_context_t::ibv_context_t(verbs_t& verbs, int rank, int ranks_count, ibv_bootstrap_t bootstrap,
                             const ibv_context_options_t& options)
    : verbs_(verbs),
      rank_(rank),
      ranks_count_(ranks_count),
      bootstrap_(std::move(bootstrap)),
      options_(options) {
  if (rank < 0 || rank >= ranks_count) {
    throw std::invalid_argument("ibv_context_t: rank " + std::to_string(rank) + " outside [0, " +
                                std::to_string(ranks_count) + ")");
  }
  LCI_ASSERT(bootstrap_.allgather != nullptr, "ibv_context_t needs an allgather");
  LCI_ASSERT(bootstrap_.wait != nullptr, "ibv_context_t needs a wait hook");
  int devices_count = 0;
  errno = 0;
  ibv_device** devices = verbs_.get_device_list(&devices_count);
  if (devices == nullptr) {
    throw_open(verbs_, "cannot list RDMA devices: " + errno_text(errno) +
                           " (no RDMA support in this kernel?)");
  }
  ibv_device* chosen = nullptr;
  for (int i = 0; i < devices_count && chosen == nullptr; ++i) {
    if (options_.device_name.empty() ||
        options_.device_name == verbs_.get_device_name(devices[i])) {
      chosen = devices[i];
    }
  }
  if (chosen != nullptr) context_ = verbs_.open_device(chosen);
  const int open_errno = errno;
  verbs_.free_device_list(devices);
  if (chosen == nullptr) {
    throw_open(verbs_, options_.device_name.empty()
                           ? std::string("no RDMA device found")
                           : "no RDMA device named '" + options_.device_name + "'");
  }
  if (context_ == nullptr) throw_open(verbs_, "cannot open the device: " + errno_text(open_errno));
  if (int error = verbs_.query_device(context_, &device_attr_)) {
    throw_open(verbs_, "query_device failed: " + errno_text(error));
  }
  if (int error = verbs_.query_port(context_, options_.port_num, &port_attr_)) {
    throw_open(verbs_, "query_port failed: " + errno_text(error));
  }
  if (port_attr_.state != IBV_PORT_ACTIVE) {
    throw_open(verbs_, "port " + std::to_string(options_.port_num) + " is not active");
  }
}

ibv_context_options_t parse_device_name(const std::string& value) {
  ibv_context_options_t options;
  const std::size_t colon = value.rfind(':');
  options.device_name = value.substr(0, colon);
  if (colon == std::string::npos) return options;
  const std::string port = value.substr(colon + 1);
  const bool digits = !port.empty() && port.size() <= 3 &&
                      port.find_first_not_of("0123456789") == std::string::npos;
  const int number = digits ? std::stoi(port) : 0;
  if (number < 1 || number > 255) {
    throw std::invalid_argument("device_name = \"" + value +
                                "\": the port after ':' must be a number in [1, 255]");
  }
  options.port_num = static_cast<std::uint8_t>(number);
  return options;
}

ibv_context_t::~ibv_context_t() {
  const int error = verbs_.close_device(context_);
  LCI_ASSERT(error == 0, "close_device failed: a device of this context is still open");
}

backend::net_device_attr_t ibv_context_t::device_defaults() const {
  backend::net_device_attr_t attr;
  attr.net_max_sends = sends_default;
  attr.net_max_recvs = recvs_default;
  attr.net_max_cqes = sends_default + recvs_default;
  return attr;
}

std::unique_ptr<backend::net_device_t> ibv_context_t::alloc_device(
    const backend::net_device_attr_t& requested) {
  return std::make_unique<ibv_device_t>(*this, requested);
}

}  // namespace lci::backend::ibv
