// The allocator for buffers the runtime hands to the user (incoming active
// messages, rendezvous AM buffers): set_allocator() installs one for the
// process; the default is g_allocator_default (malloc/free).
//
// Thread safety: allocate_user_buffer() from any thread; set_user_allocator()
//                from any thread, also while runtimes run: an allocation
//                that reads the new allocator calls it fully built. The
//                previous allocator must outlive the allocations that may
//                still be using it, and a buffer goes back to the allocator
//                that made it (the user's to track across a change).
#pragma once

#include <cstddef>

#include "lci/api/lci_types.hpp"

namespace lci::detail {

void* allocate_user_buffer(std::size_t size);
void set_user_allocator(allocator_base_t* allocator);
allocator_base_t* get_user_allocator();

}  // namespace lci::detail
