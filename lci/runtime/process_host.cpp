#include "lci/runtime/process_host.hpp"

#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "lci/api/lci_generated.hpp"
#include "lci/bootstrap/bootstrap.hpp"
#include "lci/runtime/runtime_impl.hpp"

#if defined(LCI_HAVE_OFI)
#include "backends/ofi/ofi_context.hpp"
#endif

namespace lci::detail {

namespace {

#if defined(LCI_HAVE_OFI)

class process_host_t final : public host_t {
 public:
  process_host_t()
      : bootstrap_(bootstrap::open_bootstrap()),
        context_(std::make_unique<backends::ofi::ofi_context_t>(
            *bootstrap_, get_default_attr_net_context().ofi_provider_name,
            get_default_attr_net_context().device_name)) {}
  // A global runtime the program did not finalize goes first, while its
  // network still exists; then the network, then the bootstrap.
  ~process_host_t() override {
    delete g_runtime_;
    context_.reset();
  }
  process_host_t(const process_host_t&) = delete;
  process_host_t& operator=(const process_host_t&) = delete;

  backend::net_context_t& net_context() override { return *context_; }
  bool simulated() const override { return false; }
  runtime_impl_t*& g_runtime_slot() override { return g_runtime_; }
  void idle(const char* what) override {
    (void)what;
    std::this_thread::yield();  // let the peers on this machine run
  }
  unsigned& dispatch_depth() override {
    thread_local unsigned depth = 0;
    return depth;
  }

 private:
  std::unique_ptr<bootstrap::bootstrap_t> bootstrap_;
  std::unique_ptr<backend::net_context_t> context_;
  runtime_impl_t* g_runtime_ = nullptr;
};

#endif  // LCI_HAVE_OFI

}  // namespace

host_t& process_host() {
#if defined(LCI_HAVE_OFI)
  // Created on first use (a throwing creation is tried again by the next
  // call); destroyed at exit, after main() returns.
  static process_host_t host;
  return host;
#else
  throw std::runtime_error(
      "lci: no network for this process: run the program under the simulator "
      "(lci::sim::run_ranks, or an example's main), or build with --config=ofi "
      "(libfabric) and start it under a launcher (tools/lcirun -n N prog)");
#endif
}

}  // namespace lci::detail
