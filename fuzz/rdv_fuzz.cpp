// libFuzzer target for the rendezvous messages a target receives that name
// its receive by id: FIN (write protocol) and the write-with-immediate's
// rdv_data, whose immediate value is the id rdv_table_t (lci/runtime/
// rdv_table.hpp) handed out when the RTR left. progress.cpp decodes such
// an arrival as imm_type + imm_value and calls rdv_table_t::take(id). The
// input is a stream of receiver-side events run on a real rdv_table_t and
// on a model (the set of ids in use). Checked:
//   - every id add() hands out is new, fits the 28-bit immediate value, and
//     survives make_imm(fin or rdv_data, id) -> imm_type / imm_value;
//   - a FIN naming an id in use returns its receive, once: a second FIN for
//     it (duplicated) or any id not in use (corrupt, from the network) is
//     refused with std::logic_error (the table's documented error), never
//     an assertion or a read out of bounds.
// RTS and RTR payloads are decoded in lci/progress/progress.cpp
// (payload_as), not reachable here; see docs/verification.md.
//
// Input format: byte i, at most events_max of them:
//   bits 0-1  0, 1: a rendezvous receive starts (add)
//             2: a FIN or rdv_data for an id in use (bits 3-7 pick which)
//             3: an arrival with arbitrary immediate data: the next 4 bytes,
//                little-endian (decoded only when its type is fin or
//                rdv_data)
//   bit 2     2: rdv_data instead of FIN
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "lci/runtime/rdv_table.hpp"
#include "lci/wire/immediate.hpp"

namespace {

using lci::detail::rdv_table_t;
using lci::detail::request_t;
using lci::detail::msg_type_t;

constexpr std::size_t events_max = 2048;

[[noreturn]] void fail(const char* what, std::uint32_t id) {
  std::fprintf(stderr, "rdv_fuzz: %s (id %u)\n", what, id);
  std::abort();
}

// A distinct, never dereferenced stand-in for the receive behind an id.
request_t* receive_of(std::uint64_t serial) {
  return reinterpret_cast<request_t*>(static_cast<std::uintptr_t>(0x1000 + 16 * serial));
}

struct run_t {
  rdv_table_t table;
  // The model: id -> its receive, for the ids in use.
  std::vector<request_t*> in_use;  // by id; nullptr: free
  std::vector<std::uint32_t> live_ids;
  std::uint64_t serial = 0;

  void add() {
    request_t* receive = receive_of(serial++);
    const std::uint32_t id = table.add(receive);
    if (id > lci::detail::imm_value_max) fail("an id over the immediate's 28 bits", id);
    for (msg_type_t type : {msg_type_t::fin, msg_type_t::rdv_data}) {
      const std::uint32_t imm = lci::detail::make_imm(type, id);
      if (lci::detail::imm_type(imm) != type || lci::detail::imm_value(imm) != id ||
          lci::detail::imm_has_header(imm)) {
        fail("an id does not survive the immediate", id);
      }
    }
    if (id >= in_use.size()) in_use.resize(id + 1, nullptr);
    if (in_use[id] != nullptr) fail("an id handed out twice", id);
    in_use[id] = receive;
    live_ids.push_back(id);
  }

  // A FIN/rdv_data arrival with immediate data `imm` (its type already
  // checked).
  void arrive(std::uint32_t imm) {
    const std::uint32_t id = lci::detail::imm_value(imm);
    request_t* expected = id < in_use.size() ? in_use[id] : nullptr;
    request_t* got = nullptr;
    try {
      got = table.take(id);
    } catch (const std::logic_error&) {
      if (expected != nullptr) fail("refused an id in use", id);
      return;
    }
    if (expected == nullptr) fail("accepted an id not in use", id);
    if (got != expected) fail("returned another receive", id);
    in_use[id] = nullptr;
    live_ids.erase(std::find(live_ids.begin(), live_ids.end(), id));
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  run_t run;
  std::size_t events = 0;
  for (std::size_t i = 0; i < size && events < events_max; ++i, ++events) {
    const std::uint8_t byte = data[i];
    const msg_type_t type = (byte & 4) != 0 ? msg_type_t::rdv_data : msg_type_t::fin;
    switch (byte & 3) {
      case 0:
      case 1:
        run.add();
        break;
      case 2: {
        if (run.live_ids.empty()) break;
        const std::uint32_t id = run.live_ids[(byte >> 3) % run.live_ids.size()];
        run.arrive(lci::detail::make_imm(type, id));
        // Delivered twice (a duplicate from the network): refused now.
        if ((byte & 0x80) != 0) run.arrive(lci::detail::make_imm(type, id));
        break;
      }
      default: {
        if (size - i <= 4) return 0;
        std::uint32_t imm = 0;
        for (int k = 0; k < 4; ++k) imm |= static_cast<std::uint32_t>(data[i + 1 + k]) << (8 * k);
        i += 4;
        const msg_type_t arrived = lci::detail::imm_type(imm);
        if (arrived == msg_type_t::fin || arrived == msg_type_t::rdv_data) run.arrive(imm);
        break;
      }
    }
  }
  // Whatever is still in use comes out exactly once.
  while (!run.live_ids.empty()) run.arrive(lci::detail::make_imm(msg_type_t::fin, run.live_ids.back()));
  return 0;
}
