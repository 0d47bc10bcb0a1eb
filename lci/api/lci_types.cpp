#include "lci/api/lci_types.hpp"

namespace lci {

const char* DEFAULT_NAME = "unnamed";
allocator_default_t g_allocator_default;

}  // namespace lci
