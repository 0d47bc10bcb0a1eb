#include "lci/api/lci_types.hpp"

namespace lci {

const char* DEFAULT_NAME = "unnamed";

}  // namespace lci
