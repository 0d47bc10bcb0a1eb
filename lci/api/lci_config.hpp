// Compile-time facts about this LCI build, under the macro names of
// upstream LCI's lci_config.hpp, for programs that read them (lci.hpp
// includes this header). Only the macros that mean something here are
// defined; docs/api_compat.md lists the others.
//
// Thread safety: constants only.
#pragma once

// The version of the upstream API lci.hpp follows; tools/install/BUILD
// (LCI_VERSION) installs the package under the same number.
#define LCI_VERSION_MAJOR 2
#define LCI_VERSION_MINOR 0
#define LCI_VERSION_PATCH 0
#define LCI_VERSION_SUFFIX ""
#define LCI_VERSION_HEX ((LCI_VERSION_MAJOR << 16) | (LCI_VERSION_MINOR << 8) | (LCI_VERSION_PATCH))
#define LCI_VERSION_STRING "2.0.0"
#define LCI_VERSION_FULL "2.0.0"

// A packet pool's packet_size and npackets when left 0 (in a process; the
// simulator, whose ranks share one, gives each rank fewer packets).
#define LCI_PACKET_SIZE_DEFAULT 8192
#define LCI_PACKET_NUM_DEFAULT 8192

// The most completions one poll of a device takes from the network: a
// progress() call, or a round of net_poll_cq (which takes more in rounds).
// A statuses array of this size holds one round.
#define LCI_BACKEND_MAX_POLLS 16

// The cache line the runtime pads shared atomics to (lci/util/cache.hpp).
#define LCI_CACHE_LINE 64

// Features upstream may compile in and this build never has: a
// shared-memory transport and a registration cache.
#define LCI_WITH_SHM 0
#define LCI_USE_REG_CACHE 0
