// ofi_device_t and ofi_context_t in one process (local bootstrap: rank 0 of
// 1, talking to itself) over each provider the project runs on: resolved
// attributes, misuse errors, an unusable provider's error, the remote CQ
// data a provider needs, every kind of operation with each completion field
// checked, multi-receive buffers too, and polls with more waiting than fits.
#include <gtest/gtest.h>

#include <rdma/fabric.h>
#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backends/ofi/ofi_context.hpp"
#include "backends/ofi/ofi_device.hpp"
#include "lci/bootstrap/bootstrap.hpp"

namespace lci::backend::ofi {
namespace {

using backend::net_device_attr_t;
using backend::net_device_t;
using backend::net_fault_t;
using backend::net_mr_t;
using backend::net_opcode_t;
using backend::net_rmr_t;
using backend::net_status_t;

constexpr std::size_t turns_max = 2'000'000;

class OfiDevice : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    bootstrap_ = bootstrap::open_bootstrap(bootstrap::bootstrap_kind_t::local);
    context_ = std::make_unique<ofi_context_t>(*bootstrap_, GetParam());
  }

  // Polls until one completion arrives; fails the test after turns_max.
  net_status_t wait_one(net_device_t& device) {
    net_status_t status;
    for (std::size_t turn = 0; turn < turns_max; ++turn) {
      if (device.poll_comp(&status, 1) == 1) return status;
      sched_yield();
    }
    ADD_FAILURE() << "no completion after " << turns_max << " polls";
    return status;
  }

  // Retries `post` (polling in between, keeping what it finds) until accepted.
  error_t post(net_device_t& device, const std::function<error_t()>& op,
               std::vector<net_status_t>* seen) {
    for (std::size_t turn = 0; turn < turns_max; ++turn) {
      const error_t error = op();
      if (!error.is_retry()) return error;
      net_status_t status;
      if (device.poll_comp(&status, 1) == 1) seen->push_back(status);
    }
    ADD_FAILURE() << "a post was refused " << turns_max << " times";
    return errorcode_t::retry;
  }

  std::unique_ptr<bootstrap::bootstrap_t> bootstrap_;
  std::unique_ptr<ofi_context_t> context_;
};

TEST_P(OfiDevice, ContextNamesItsProviderAndRank) {
  EXPECT_EQ(context_->provider_name(), GetParam());
  EXPECT_EQ(context_->rank_me(), 0);
  EXPECT_EQ(context_->rank_n(), 1);
}

TEST_P(OfiDevice, AttributesTakeRequestsWithinProviderLimits) {
  net_device_attr_t small;
  small.net_max_sends = 4;
  small.net_max_recvs = 5;
  // Above sends + recvs (+ the device's own notice receives, where it has
  // them): taken as asked.
  small.net_max_cqes = 256;
  small.inject_size_max = 16;
  const std::unique_ptr<net_device_t> device = context_->alloc_device(small);
  const net_device_attr_t& attr = device->attr();
  EXPECT_EQ(attr.net_max_sends, 4u);
  EXPECT_EQ(attr.net_max_recvs, 5u);
  EXPECT_EQ(attr.net_max_cqes, 256u);
  EXPECT_EQ(attr.inject_size_max, 16u);
  EXPECT_TRUE(attr.supports_put_imm);
  EXPECT_LE(attr.max_msg_size, std::size_t{0xFFFFFFFF});

  const std::unique_ptr<net_device_t> defaults = context_->alloc_device({});
  const fi_info* info = context_->info();
  EXPECT_EQ(defaults->attr().net_max_sends,
            std::min(net_max_sends_default, info->tx_attr->size));
  EXPECT_EQ(defaults->attr().net_max_recvs,
            std::min(net_max_recvs_default, info->rx_attr->size));
  EXPECT_GE(defaults->attr().net_max_cqes,
            defaults->attr().net_max_sends + defaults->attr().net_max_recvs);
  EXPECT_GT(defaults->attr().inject_size_max, 0u);
  EXPECT_LE(defaults->attr().inject_size_max, info->tx_attr->inject_size);
}

TEST_P(OfiDevice, MisuseIsThrownNamingTheArgument) {
  const std::unique_ptr<net_device_t> device = context_->alloc_device({});
  char buffer[64] = {};
  try {
    (void)device->post_send(1, buffer, 8, net_mr_t{}, 0, nullptr);
    FAIL() << "a send to rank 1 of 1 was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("rank 1"), std::string::npos) << error.what();
  }
  const std::size_t too_big = device->attr().inject_size_max + 1;
  std::vector<char> big(too_big);
  EXPECT_THROW((void)device->post_sends(0, big.data(), too_big, 0), std::invalid_argument);
  EXPECT_THROW((void)device->post_puts(0, big.data(), too_big, 0, net_rmr_t{1, 1}),
               std::invalid_argument);
  EXPECT_THROW((void)device->post_send(0, nullptr, 8, net_mr_t{}, 0, nullptr),
               std::invalid_argument);
  EXPECT_THROW((void)device->register_memory(nullptr, 8, nullptr), std::invalid_argument);
  net_mr_t mr;
  EXPECT_THROW((void)device->register_memory(nullptr, 8, &mr), std::invalid_argument);
  EXPECT_THROW((void)device->get_rmr(net_mr_t{}), std::invalid_argument);
  EXPECT_THROW(device->deregister_memory(&mr), std::invalid_argument);
}

TEST(OfiContext, AnUnusableProviderNamesItselfAndTheAlternatives) {
  const auto bootstrap = bootstrap::open_bootstrap(bootstrap::bootstrap_kind_t::local);
  try {
    ofi_context_t context(*bootstrap, "no_such_provider");
    FAIL() << "a context opened over a provider that does not exist";
  } catch (const std::runtime_error& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("\"no_such_provider\""), std::string::npos) << what;
    EXPECT_NE(what.find("\"shm\""), std::string::npos) << what;
    EXPECT_NE(what.find("LCI_ATTR_OFI_PROVIDER_NAME"), std::string::npos) << what;
  }
}

// A provider is usable only where its remote CQ data carries an immediate,
// and has put-with-immediate only where it carries 64 bits (the immediate
// and the length).
TEST(OfiContext, RemoteCqDataSizeDecidesImmediatesAndPutImm) {
  const std::unique_ptr<fi_info, decltype(&fi_freeinfo)> info(fi_allocinfo(), &fi_freeinfo);
  ASSERT_NE(info, nullptr);
  info->domain_attr->cq_data_size = sizeof(backend::net_imm_data_t) - 1;
  EXPECT_FALSE(carries_imm_data(info.get()));
  info->domain_attr->cq_data_size = sizeof(backend::net_imm_data_t);
  EXPECT_TRUE(carries_imm_data(info.get()));
  EXPECT_FALSE(put_imm_capable(info.get()));
  info->domain_attr->cq_data_size = sizeof(std::uint64_t);
  EXPECT_TRUE(carries_imm_data(info.get()));
  EXPECT_TRUE(put_imm_capable(info.get()));
}

// device_name picks the network interface (or address) tcp binds to — the
// way a job spans machines — and a name that is neither is refused naming
// it and the interfaces there are.
TEST(OfiContext, ADeviceNameSelectsTheInterface) {
  const auto bootstrap = bootstrap::open_bootstrap(bootstrap::bootstrap_kind_t::local);
  ofi_context_t context(*bootstrap, "tcp;ofi_rxm", "lo");
  const std::unique_ptr<net_device_t> device = context.alloc_device({});
  char inbox[8] = {};
  const char text[] = "via lo";
  ASSERT_TRUE(device->post_recv(inbox, sizeof(inbox), net_mr_t{}, nullptr).is_done());
  error_t posted = errorcode_t::retry;
  for (std::size_t turn = 0; turn < turns_max && posted.is_retry(); ++turn) {
    posted = device->post_send(0, text, sizeof(text), net_mr_t{}, 0, nullptr);
  }
  ASSERT_TRUE(posted.is_posted());
  std::size_t completions = 0;
  for (std::size_t turn = 0; turn < turns_max && completions < 2; ++turn) {
    net_status_t status;
    if (device->poll_comp(&status, 1) == 1) {
      EXPECT_EQ(status.fault, net_fault_t::none) << backend::describe_fault(status);
      ++completions;
    }
  }
  ASSERT_EQ(completions, 2u);
  EXPECT_STREQ(inbox, text);
  try {
    ofi_context_t unknown(*bootstrap, "tcp;ofi_rxm", "no_such_if0");
    FAIL() << "a context bound to an interface that does not exist";
  } catch (const std::runtime_error& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("device_name \"no_such_if0\" is neither"), std::string::npos) << what;
    EXPECT_NE(what.find("\"lo\""), std::string::npos) << what;
  }
  ofi_context_t by_address(*bootstrap, "tcp;ofi_rxm", "127.0.0.1");
  EXPECT_NE(by_address.alloc_device({}), nullptr);
}

TEST_P(OfiDevice, SendToSelfReportsEveryField) {
  const std::unique_ptr<net_device_t> device = context_->alloc_device({});
  std::vector<net_status_t> seen;
  char inbox[128] = {};
  ASSERT_TRUE(post(*device, [&] { return device->post_recv(inbox, sizeof(inbox), net_mr_t{},
                                                           reinterpret_cast<void*>(7)); },
                   &seen).is_done());
  const char text[] = "hello over libfabric";
  ASSERT_TRUE(post(*device, [&] { return device->post_send(0, text, sizeof(text), net_mr_t{},
                                                           0xC0FFEE, reinterpret_cast<void*>(9)); },
                   &seen).is_posted());
  while (seen.size() < 2) seen.push_back(wait_one(*device));
  ASSERT_EQ(seen.size(), 2u);
  for (const net_status_t& status : seen) {
    EXPECT_EQ(status.fault, net_fault_t::none) << backend::describe_fault(status);
    EXPECT_EQ(status.rank, 0);
    EXPECT_EQ(status.length, sizeof(text));
    if (status.opcode == net_opcode_t::recv) {
      EXPECT_EQ(status.user_context, reinterpret_cast<void*>(7));
      EXPECT_EQ(status.buffer, inbox);
      EXPECT_EQ(status.imm_data, 0xC0FFEEu);
      EXPECT_STREQ(inbox, text);
    } else {
      EXPECT_EQ(status.opcode, net_opcode_t::send);
      EXPECT_EQ(status.user_context, reinterpret_cast<void*>(9));
    }
  }
}

TEST_P(OfiDevice, PutImmAndGetOnSelf) {
  const std::unique_ptr<net_device_t> device = context_->alloc_device({});
  std::vector<char> target(256, 'T'), source(64, 'S'), readback(32, 'R');
  net_mr_t target_mr, source_mr, readback_mr;
  ASSERT_TRUE(device->register_memory(target.data(), target.size(), &target_mr).is_done());
  ASSERT_TRUE(device->register_memory(source.data(), source.size(), &source_mr).is_done());
  ASSERT_TRUE(device->register_memory(readback.data(), readback.size(), &readback_mr).is_done());
  const net_rmr_t rmr = device->get_rmr(target_mr);
  EXPECT_EQ(rmr.base, reinterpret_cast<std::uintptr_t>(target.data()));

  std::vector<net_status_t> seen;
  ASSERT_TRUE(post(*device, [&] {
    return device->post_putImm(0, source.data(), 64, source_mr, 100, rmr, 0xABCD,
                               reinterpret_cast<void*>(1));
  }, &seen).is_posted());
  while (seen.size() < 2) seen.push_back(wait_one(*device));
  bool local = false, remote = false;
  for (const net_status_t& status : seen) {
    EXPECT_EQ(status.fault, net_fault_t::none) << backend::describe_fault(status);
    EXPECT_EQ(status.rank, 0);
    EXPECT_EQ(status.length, 64u);
    if (status.opcode == net_opcode_t::remote_write) {
      remote = true;
      EXPECT_EQ(status.imm_data, 0xABCDu);
      EXPECT_EQ(status.user_context, nullptr);
    } else {
      local = true;
      EXPECT_EQ(status.opcode, net_opcode_t::write);
      EXPECT_EQ(status.user_context, reinterpret_cast<void*>(1));
    }
  }
  EXPECT_TRUE(local && remote);
  EXPECT_EQ(std::string(target.data() + 100, 64), std::string(64, 'S'));
  EXPECT_EQ(target[99], 'T');
  EXPECT_EQ(target[164], 'T');

  seen.clear();
  ASSERT_TRUE(post(*device, [&] {
    return device->post_get(0, readback.data(), 32, readback_mr, 90, rmr,
                            reinterpret_cast<void*>(2));
  }, &seen).is_posted());
  while (seen.empty()) seen.push_back(wait_one(*device));
  EXPECT_EQ(seen[0].opcode, net_opcode_t::read);
  EXPECT_EQ(seen[0].user_context, reinterpret_cast<void*>(2));
  EXPECT_EQ(std::string(readback.data(), 32), std::string(10, 'T') + std::string(22, 'S'));
  for (net_mr_t* mr : {&target_mr, &source_mr, &readback_mr}) {
    device->deregister_memory(mr);
    EXPECT_TRUE(mr->is_empty());
  }
}

// Every lock mode (ofi_lock_mode's bits; ofi_device.hpp): registration, a
// receive, a send and a put to itself complete, whichever calls wait for
// the endpoint lock and whichever try it, and with registration under it.
TEST_P(OfiDevice, EveryLockModeRegistersSendsAndPuts) {
  for (std::uint64_t mode = 0; mode <= backend::net_lock_mode_max; ++mode) {
    SCOPED_TRACE("lock_mode " + std::to_string(mode));
    net_device_attr_t requested;
    requested.lock_mode = mode;
    const std::unique_ptr<net_device_t> device = context_->alloc_device(requested);
    std::vector<char> target(64, 'T'), source(64, 'S');
    net_mr_t target_mr, source_mr;
    ASSERT_TRUE(device->register_memory(target.data(), target.size(), &target_mr).is_done());
    ASSERT_TRUE(device->register_memory(source.data(), source.size(), &source_mr).is_done());
    std::vector<net_status_t> seen;
    char inbox[16] = {};
    ASSERT_TRUE(post(*device, [&] {
      return device->post_recv(inbox, sizeof(inbox), net_mr_t{}, nullptr);
    }, &seen).is_done());
    ASSERT_TRUE(post(*device, [&] {
      return device->post_send(0, source.data(), 8, source_mr, 0, nullptr);
    }, &seen).is_posted());
    ASSERT_TRUE(post(*device, [&] {
      return device->post_put(0, source.data(), 32, source_mr, 16, device->get_rmr(target_mr),
                              nullptr);
    }, &seen).is_posted());
    while (seen.size() < 3) seen.push_back(wait_one(*device));
    for (const net_status_t& status : seen) {
      EXPECT_EQ(status.fault, net_fault_t::none) << backend::describe_fault(status);
    }
    EXPECT_EQ(std::string(inbox, 8), std::string(8, 'S'));
    EXPECT_EQ(std::string(target.data() + 16, 32), std::string(32, 'S'));
    device->deregister_memory(&target_mr);
    device->deregister_memory(&source_mr);
  }
}

// A poll writes at most statuses_max completions, however many wait: here
// zero-byte puts, settled without a provider operation and reported by the
// next polls in the order posted.
TEST_P(OfiDevice, APollWritesNoMoreThanStatusesMax) {
  const std::unique_ptr<net_device_t> device = context_->alloc_device({});
  char exposed[8] = {};
  net_mr_t exposed_mr;
  ASSERT_TRUE(device->register_memory(exposed, sizeof(exposed), &exposed_mr).is_done());
  const net_rmr_t rmr = device->get_rmr(exposed_mr);
  constexpr std::size_t puts_count = 5;
  constexpr std::size_t statuses_max = puts_count - 1;
  for (std::size_t i = 0; i < puts_count; ++i) {
    ASSERT_TRUE(device->post_put(0, nullptr, 0, net_mr_t{}, 0, rmr,
                                 reinterpret_cast<void*>(i + 1)).is_posted());
  }
  // One status past the array the poll is given: it must stay as written.
  std::vector<net_status_t> statuses(statuses_max + 1);
  int canary = 0;
  statuses[statuses_max].user_context = &canary;
  ASSERT_EQ(device->poll_comp(statuses.data(), statuses_max), statuses_max);
  EXPECT_EQ(statuses[statuses_max].user_context, &canary) << "a poll wrote past statuses_max";
  ASSERT_EQ(device->poll_comp(&statuses[statuses_max], 1), 1u);
  for (std::size_t i = 0; i < puts_count; ++i) {
    EXPECT_EQ(statuses[i].opcode, net_opcode_t::write);
    EXPECT_EQ(statuses[i].fault, net_fault_t::none) << backend::describe_fault(statuses[i]);
    EXPECT_EQ(statuses[i].length, 0u);
    EXPECT_EQ(statuses[i].user_context, reinterpret_cast<void*>(i + 1));
  }
  device->deregister_memory(&exposed_mr);
}

// A full send pool is retry_nomem and changes nothing: every accepted send
// completes exactly once.
TEST_P(OfiDevice, AFullSendPoolIsRetryNomem) {
  net_device_attr_t small;
  small.net_max_sends = 2;
  small.net_max_recvs = 8;
  const std::unique_ptr<net_device_t> device = context_->alloc_device(small);
  char inboxes[8][16];
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(device->post_recv(inboxes[i], 16, net_mr_t{}, nullptr).is_done());
  }
  const char text[8] = "abcdefg";
  int accepted = 0;
  bool refused = false;
  while (accepted < 8 && !refused) {
    const error_t error = device->post_send(0, text, sizeof(text), net_mr_t{}, 0,
                                            reinterpret_cast<void*>(accepted + 1));
    if (error.is_retry()) {
      EXPECT_EQ(error, errorcode_t::retry_nomem);
      refused = true;
    } else {
      ++accepted;
    }
  }
  EXPECT_TRUE(refused) << "8 sends accepted with net_max_sends = 2";
  EXPECT_LE(accepted, 2);
  int sends = 0, recvs = 0;
  while (sends < accepted || recvs < accepted) {
    const net_status_t status = wait_one(*device);
    if (HasFailure()) return;
    (status.opcode == net_opcode_t::send ? sends : recvs) += 1;
  }
  EXPECT_EQ(sends, accepted);
  EXPECT_EQ(recvs, accepted);
}

// supports_multi_recv only when asked for; multi_recv_min_free as asked, or
// the default; post_recv_multi refuses a device without it, a null buffer
// and one smaller than multi_recv_min_free, and takes one of exactly that.
TEST_P(OfiDevice, MultiRecvIsGrantedOnRequestAndChecksItsBuffer) {
  const std::unique_ptr<net_device_t> plain = context_->alloc_device({});
  EXPECT_FALSE(plain->attr().supports_multi_recv);
  char buffer[64] = {};
  EXPECT_THROW((void)plain->post_recv_multi(buffer, sizeof(buffer), nullptr), std::logic_error);

  net_device_attr_t requested;
  requested.supports_multi_recv = true;
  const std::unique_ptr<net_device_t> defaults = context_->alloc_device(requested);
  ASSERT_TRUE(defaults->attr().supports_multi_recv);  // both providers offer FI_MULTI_RECV
  EXPECT_EQ(defaults->attr().multi_recv_min_free, multi_recv_min_free_default);

  requested.multi_recv_min_free = 48;
  const std::unique_ptr<net_device_t> device = context_->alloc_device(requested);
  EXPECT_EQ(device->attr().multi_recv_min_free, 48u);
  EXPECT_THROW((void)device->post_recv_multi(nullptr, 64, nullptr), std::invalid_argument);
  std::vector<net_status_t> seen;
  EXPECT_TRUE(post(*device, [&] { return device->post_recv_multi(buffer, 48, nullptr); },
                   &seen).is_done())
      << "a buffer of exactly multi_recv_min_free was refused";
  try {
    (void)device->post_recv_multi(buffer, 47, nullptr);
    FAIL() << "a 47-byte multi-receive buffer was accepted with multi_recv_min_free = 48";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("size 47"), std::string::npos) << error.what();
  }
}

// Two multi-receive buffers take 50 messages of 0 to 256 bytes (with their
// immediates) packed without overlap; the first is released once less than
// multi_recv_min_free is left, by the provider's flag on its last message or
// by a completion of its own, counting its messages, and gets no message
// after; the second is still posted when the device closes (its teardown
// drops it).
TEST_P(OfiDevice, MultiRecvPacksMessagesAndReleasesTheBuffer) {
  constexpr std::size_t buffer_size = 4096;
  constexpr std::size_t min_free = 256;
  constexpr std::size_t messages_count = 50;
  // Sizes 0..256 in a scattered order, 5,747 bytes in all: more than the
  // first buffer keeps (it is released past 4096 - 256) and less than both.
  const auto size_of = [](std::size_t i) { return (i * 37) % (min_free + 1); };
  const auto byte_of = [](std::size_t i, std::size_t k) { return static_cast<char>(i * 7 + k); };
  std::vector<std::vector<char>> buffers(2, std::vector<char>(buffer_size, 0));
  std::vector<std::vector<char>> payloads(messages_count);
  for (std::size_t i = 0; i < messages_count; ++i) {
    for (std::size_t k = 0; k < size_of(i); ++k) payloads[i].push_back(byte_of(i, k));
  }
  net_device_attr_t requested;
  requested.supports_multi_recv = true;
  requested.multi_recv_min_free = min_free;
  const std::unique_ptr<net_device_t> device = context_->alloc_device(requested);
  ASSERT_TRUE(device->attr().supports_multi_recv);
  std::vector<net_status_t> seen;
  for (std::vector<char>& buffer : buffers) {
    ASSERT_TRUE(post(*device, [&] {
      return device->post_recv_multi(buffer.data(), buffer.size(), &buffer);
    }, &seen).is_done());
  }
  for (std::size_t i = 0; i < messages_count; ++i) {
    ASSERT_TRUE(post(*device, [&] {
      return device->post_send(0, payloads[i].data(), payloads[i].size(), net_mr_t{},
                               static_cast<backend::net_imm_data_t>(i), nullptr);
    }, &seen).is_posted());
  }
  // Per buffer: the [offset, end) of each message; and how it was released.
  std::vector<std::pair<std::size_t, std::size_t>> spans[2];
  std::vector<bool> arrived(messages_count, false);
  std::size_t sends = 0, messages = 0, releases = 0;
  bool released[2] = {false, false};
  std::size_t cursor = 0;
  while (sends < messages_count || messages < messages_count || releases < 1) {
    const net_status_t status = cursor < seen.size() ? seen[cursor++] : wait_one(*device);
    if (HasFailure()) return;
    ASSERT_EQ(status.fault, net_fault_t::none) << backend::describe_fault(status);
    if (status.opcode == net_opcode_t::send) {
      ++sends;
      continue;
    }
    ASSERT_EQ(status.opcode, net_opcode_t::recv);
    const std::size_t b = status.user_context == &buffers[0] ? 0 : 1;
    ASSERT_EQ(status.user_context, &buffers[b]);
    ASSERT_FALSE(released[b]) << "a completion of buffer " << b << " after its release";
    released[b] = status.buffer_released;
    releases += status.buffer_released ? 1 : 0;
    const bool message = status.buffer != nullptr;  // else the release alone
    if (!message) EXPECT_TRUE(status.buffer_released);
    if (!message) EXPECT_EQ(status.length, 0u);
    const std::size_t landed = spans[b].size() + (message ? 1 : 0);
    EXPECT_EQ(status.buffer_messages, status.buffer_released ? landed : 0);
    if (!message) continue;
    ++messages;
    ASSERT_EQ(status.rank, 0);
    const std::size_t i = status.imm_data;
    ASSERT_LT(i, messages_count);
    EXPECT_FALSE(arrived[i]) << "message " << i << " arrived twice";
    arrived[i] = true;
    EXPECT_EQ(status.length, size_of(i)) << "message " << i;
    const char* bytes = static_cast<const char*>(status.buffer);
    ASSERT_GE(bytes, buffers[b].data()) << "message " << i;
    const std::size_t offset = static_cast<std::size_t>(bytes - buffers[b].data());
    ASSERT_LE(offset + status.length, buffer_size) << "message " << i;
    EXPECT_EQ(std::vector<char>(bytes, bytes + status.length), payloads[i]) << "message " << i;
    spans[b].emplace_back(offset, offset + status.length);
  }
  EXPECT_TRUE(released[0]);
  EXPECT_FALSE(released[1]);
  EXPECT_GT(spans[1].size(), 0u);
  for (auto& buffer_spans : spans) {
    std::sort(buffer_spans.begin(), buffer_spans.end());
    for (std::size_t k = 1; k < buffer_spans.size(); ++k) {
      EXPECT_LE(buffer_spans[k - 1].second, buffer_spans[k].first) << "messages overlap";
    }
  }
  // Released: less than min_free was left of the first buffer.
  EXPECT_GT(spans[0].back().second, buffer_size - min_free);
}

INSTANTIATE_TEST_SUITE_P(Providers, OfiDevice, ::testing::Values("shm", "tcp;ofi_rxm"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param) == "shm" ? "shm" : "tcp_ofi_rxm";
                         });

}  // namespace
}  // namespace lci::backend::ofi
