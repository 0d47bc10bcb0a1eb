// The allocator for buffers the runtime hands to the user (incoming active
// messages, rendezvous AM buffers): set_allocator() installs one for the
// process; the default is g_allocator_default (malloc/free).
//
// Thread safety: allocate()/deallocate() from any thread; set_allocator()
//                while no runtime allocates (documented precondition).
#pragma once

#include <cstddef>

#include "lci/api/lci_types.hpp"

namespace lci::detail {

void* allocate_user_buffer(std::size_t size);
void deallocate_user_buffer(void* buffer);
void set_user_allocator(allocator_base_t* allocator);
allocator_base_t* get_user_allocator();

}  // namespace lci::detail
