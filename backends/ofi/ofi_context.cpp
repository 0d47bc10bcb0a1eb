#include "backends/ofi/ofi_context.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backends/ofi/detail/ofi_check.hpp"
#include "backends/ofi/ofi_device.hpp"
#include "backends/ofi/ofi_probe.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/try_lock.hpp"

namespace lci::backend::ofi {

namespace {

// The API version this backend is written against (Debian 12 ships 1.17).
constexpr std::uint32_t fi_api_version = FI_VERSION(1, 17);

// Contexts this process has opened; every rank opens its contexts in the
// same order, so the count names bootstrap keys consistently. relaxed: only
// uniqueness matters.
util::atomic<std::uint32_t> g_contexts_opened{0};

// What this backend asks of a provider (see ofi_context.hpp).
fi_info* make_hints(const char* provider_name) {
  fi_info* hints = fi_allocinfo();
  if (hints == nullptr) throw std::bad_alloc();
  hints->ep_attr->type = FI_EP_RDM;
  // FI_TAGGED: only for put-with-immediate notices (docs/backends/ofi.md).
  hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ |
                FI_REMOTE_WRITE | FI_SOURCE;
  // Accepted: op contexts are our own fi_context2 (ofi_op_table.hpp).
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
                                FI_MR_ENDPOINT;
  hints->domain_attr->threading = FI_THREAD_SAFE;
  hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
  hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
  // fi_freeinfo frees it.
  hints->fabric_attr->prov_name = strdup(provider_name);
  return hints;
}

bool is_ip_address_format(std::uint32_t format) {
  return format == FI_SOCKADDR || format == FI_SOCKADDR_IN || format == FI_SOCKADDR_IN6;
}

// The IPv4 address an IP provider binds to: of the interface named
// `device_name` ("eth0"), `device_name` itself when it is an address, or
// loopback when it is empty (the job runs on one machine). false with
// *error set when it is neither.
bool source_address(const std::string& device_name, std::string* address, std::string* error) {
  if (device_name.empty()) {
    *address = "127.0.0.1";
    return true;
  }
  in_addr parsed{};
  if (inet_pton(AF_INET, device_name.c_str(), &parsed) == 1) {
    *address = device_name;
    return true;
  }
  ifaddrs* interfaces = nullptr;
  if (getifaddrs(&interfaces) != 0) {
    *error = "device_name \"" + device_name + "\": getifaddrs failed";
    return false;
  }
  std::string names;
  for (const ifaddrs* entry = interfaces; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    const auto* ipv4 = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
    if (device_name == entry->ifa_name) {
      char text[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &ipv4->sin_addr, text, sizeof(text));
      *address = text;
      freeifaddrs(interfaces);
      return true;
    }
    names += (names.empty() ? "\"" : ", \"") + std::string(entry->ifa_name) + "\"";
  }
  freeifaddrs(interfaces);
  *error = "device_name \"" + device_name +
           "\" is neither an IPv4 network interface here (" + names + ") nor an address";
  return false;
}

// fi_getinfo with make_hints(), asking for FI_MULTI_RECV too (multi-receive
// buffers, docs/backends/ofi.md) and, where the provider refuses that, without it:
// a provider lacking it stays usable, its devices without
// supports_multi_recv. Whether it was granted is (*info)->caps.
int get_info(const char* provider_name, const char* node, std::uint64_t flags,
             fi_info** info) {
  fi_info* hints = make_hints(provider_name);
  hints->caps |= FI_MULTI_RECV;
  int rc = fi_getinfo(fi_api_version, node, nullptr, flags, hints, info);
  if (rc != 0) {
    hints->caps &= ~FI_MULTI_RECV;
    rc = fi_getinfo(fi_api_version, node, nullptr, flags, hints, info);
  }
  fi_freeinfo(hints);
  return rc;
}

// fi_getinfo for one provider; nullptr with *error set when it is unusable.
// A provider that addresses peers by IP is asked again, bound to the
// address source_address() gives for `device_name`.
fi_info* try_provider(const char* provider_name, const std::string& device_name,
                      std::string* error) {
  fi_info* info = nullptr;
  int rc = get_info(provider_name, nullptr, 0, &info);
  if (rc == 0 && is_ip_address_format(info->addr_format)) {
    fi_freeinfo(info);
    info = nullptr;
    std::string address;
    if (!source_address(device_name, &address, error)) return nullptr;
    rc = get_info(provider_name, address.c_str(), FI_SOURCE, &info);
  }
  if (rc != 0) {
    *error = detail::describe_fi_error("fi_getinfo", rc);
    return nullptr;
  }
  if (!carries_imm_data(info)) {
    *error = "its remote CQ data holds " + std::to_string(info->domain_attr->cq_data_size) +
             " bytes, fewer than an immediate";
    fi_freeinfo(info);
    return nullptr;
  }
  return info;
}

std::string available_providers() {
  const probe_result_t probe_result = probe();
  if (!probe_result.error.empty()) return "none (" + probe_result.error + ")";
  std::string list;
  for (const std::string& name : probe_result.providers) {
    list += (list.empty() ? "" : ", ") + ("\"" + name + "\"");
  }
  return list.empty() ? "none" : list;
}

fi_info* choose_provider(const std::string& provider_name, const std::string& device_name) {
  std::vector<std::string> candidates;
  if (provider_name.empty()) {
    for (const char* name : default_provider_names) candidates.emplace_back(name);
  } else {
    candidates.push_back(provider_name);
  }
  std::string reasons;
  for (const std::string& name : candidates) {
    std::string error;
    fi_info* info = try_provider(name.c_str(), device_name, &error);
    if (info != nullptr) return info;
    reasons += (reasons.empty() ? "" : "; ") + ("\"" + name + "\": " + error);
  }
  throw std::runtime_error(
      "lci ofi: no usable libfabric provider (" + reasons +
      "). The ofi backend needs FI_EP_RDM with FI_MSG, FI_TAGGED, FI_RMA, FI_SOURCE and remote "
      "CQ data, "
      "without FI_MR_LOCAL or FI_RX_CQ_DATA. Providers with FI_EP_RDM, FI_MSG and FI_RMA here: " +
      available_providers() + ". Choose one with LCI_ATTR_OFI_PROVIDER_NAME.");
}

// Providers whose fi_cq_readfrom is known to name the source of a remote
// write's CQ data (checked by the ofi conformance tests); others get the
// emulated put-with-immediate (docs/backends/ofi.md).
bool reports_remote_data_source(const std::string& provider_name) {
  return provider_name == "shm";
}

std::string device_key(std::uint32_t context_index, std::uint32_t device_index) {
  return "lci_ofi_c" + std::to_string(context_index) + "_d" + std::to_string(device_index);
}

}  // namespace

void ofi_context_t::info_deleter_t::operator()(fi_info* info) const { fi_freeinfo(info); }

void ofi_context_t::fabric_closer_t::operator()(fid_fabric* fabric) const {
  const int rc = fi_close(&fabric->fid);
  // Fails while a domain is open: one a device had to leave open (see
  // ~ofi_device_impl_t), already reported there.
  if (rc != 0) {
    std::fprintf(stderr, "lci ofi: closing the fabric: %s\n",
                 detail::describe_fi_error("fi_close", rc).c_str());
  }
}

ofi_context_t::ofi_context_t(bootstrap::bootstrap_t& bootstrap,
                             const std::string& provider_name, const std::string& device_name)
    : bootstrap_(bootstrap),
      rank_me_(bootstrap.rank_me()),
      rank_n_(bootstrap.rank_n()),
      context_index_(g_contexts_opened.fetch_add(1, util::mo_relaxed)),  // relaxed: see above
      info_(choose_provider(provider_name, device_name)),
      provider_name_(info_->fabric_attr->prov_name),
      peers_(bootstrap, "lci_ofi_c" + std::to_string(context_index_) + "_peers"),
      native_put_imm_(reports_remote_data_source(provider_name_)) {
  LCI_ASSERT(rank_me_ >= 0 && rank_me_ < rank_n_, "bootstrap rank outside the job");
  fid_fabric* fabric = nullptr;
  detail::check_fi("fi_fabric", fi_fabric(info_->fabric_attr, &fabric, nullptr));
  fabric_.reset(fabric);
}

backend::net_device_attr_t ofi_context_t::device_defaults() const {
  backend::net_device_attr_t attr;
  attr.net_max_sends = net_max_sends_default;
  attr.net_max_recvs = net_max_recvs_default;
  attr.net_max_cqes = net_max_cqes_default;
  return attr;
}

std::unique_ptr<backend::net_device_t> ofi_context_t::alloc_device(
    const backend::net_device_attr_t& requested) {
  util::try_lock_guard_t guard(alloc_lock_);
  if (!guard.owns_lock()) {
    throw std::logic_error("alloc_device: rank " + std::to_string(rank_me_) +
                           " allocates two devices at once; peers pair devices by "
                           "allocation order, so allocate them from one thread");
  }
  const std::string key = device_key(context_index_, devices_count_++);
  std::unique_ptr<ofi_device_t> device =
      make_device(info_.get(), fabric_.get(), peers_, rank_me_, native_put_imm_, requested);
  bootstrap_.put(key, device->name().data(), device->name().size());
  bootstrap_.fence();
  std::vector<std::vector<char>> names(rank_n_);
  for (int rank = 0; rank < rank_n_; ++rank) {
    const std::vector<std::byte> value = bootstrap_.get(rank, key);
    names[rank].resize(value.size());
    std::memcpy(names[rank].data(), value.data(), value.size());
  }
  device->insert_peers(names);
  return device;
}

bool carries_imm_data(const fi_info* info) {
  return info->domain_attr->cq_data_size >= sizeof(backend::net_imm_data_t);
}

bool put_imm_capable(const fi_info* info) {
  return info->domain_attr->cq_data_size >= sizeof(std::uint64_t);
}

}  // namespace lci::backend::ofi
