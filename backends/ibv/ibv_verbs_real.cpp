#include "backends/ibv/ibv_verbs_real.hpp"

#include <infiniband/verbs.h>
#include <poll.h>

#include <cerrno>

namespace lci::backend::ibv {
namespace {

// Each method is one libibverbs call; nothing is added here, so that what
// the emulation is checked against is exactly the library.
class real_verbs_t final : public verbs_t {
 public:
  const char* get_name() const override { return "libibverbs"; }

  ibv_device** get_device_list(int* devices_count) override {
    return ::ibv_get_device_list(devices_count);
  }
  void free_device_list(ibv_device** devices) override { ::ibv_free_device_list(devices); }
  const char* get_device_name(ibv_device* device) override {
    return ::ibv_get_device_name(device);
  }
  ibv_context* open_device(ibv_device* device) override { return ::ibv_open_device(device); }
  int close_device(ibv_context* context) override { return ::ibv_close_device(context); }
  int query_device(ibv_context* context, ibv_device_attr* device_attr) override {
    return ::ibv_query_device(context, device_attr);
  }
  int query_port(ibv_context* context, std::uint8_t port_num, ibv_port_attr* port_attr) override {
    return ibv_query_port(context, port_num, port_attr);  // a macro in verbs.h
  }
  int query_gid(ibv_context* context, std::uint8_t port_num, int index, ibv_gid* gid) override {
    return ::ibv_query_gid(context, port_num, index, gid);
  }
  int query_gid_ex(ibv_context* context, std::uint32_t port_num, std::uint32_t gid_index,
                   ibv_gid_entry* entry, std::uint32_t flags) override {
    return ::ibv_query_gid_ex(context, port_num, gid_index, entry, flags);
  }
  int query_device_ex(ibv_context* context, const ibv_query_device_ex_input* input,
                      ibv_device_attr_ex* device_attr) override {
    return ::ibv_query_device_ex(context, input, device_attr);
  }

  ibv_pd* alloc_pd(ibv_context* context) override { return ::ibv_alloc_pd(context); }
  int dealloc_pd(ibv_pd* pd) override { return ::ibv_dealloc_pd(pd); }
  ibv_td* alloc_td(ibv_context* context, ibv_td_init_attr* init_attr) override {
    return ::ibv_alloc_td(context, init_attr);
  }
  int dealloc_td(ibv_td* td) override { return ::ibv_dealloc_td(td); }
  ibv_pd* alloc_parent_domain(ibv_context* context, ibv_parent_domain_init_attr* attr) override {
    return ::ibv_alloc_parent_domain(context, attr);
  }

  ibv_mr* reg_mr(ibv_pd* pd, void* address, std::size_t length, int access) override {
    return ibv_reg_mr(pd, address, length, access);  // a macro in verbs.h
  }
  int dereg_mr(ibv_mr* mr) override { return ::ibv_dereg_mr(mr); }
  int advise_mr(ibv_pd* pd, ibv_advise_mr_advice advice, std::uint32_t flags, ibv_sge* sg_list,
                std::uint32_t num_sge) override {
    return ::ibv_advise_mr(pd, advice, flags, sg_list, num_sge);
  }

  ibv_cq* create_cq(ibv_context* context, int cqe) override {
    return ::ibv_create_cq(context, cqe, nullptr, nullptr, 0);
  }
  int destroy_cq(ibv_cq* cq) override { return ::ibv_destroy_cq(cq); }

  ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* init_attr) override {
    return ::ibv_create_srq(pd, init_attr);
  }
  int destroy_srq(ibv_srq* srq) override { return ::ibv_destroy_srq(srq); }

  ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* init_attr) override {
    return ::ibv_create_qp(pd, init_attr);
  }
  int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) override {
    return ::ibv_modify_qp(qp, attr, attr_mask);
  }
  int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask,
               ibv_qp_init_attr* init_attr) override {
    return ::ibv_query_qp(qp, attr, attr_mask, init_attr);
  }
  int destroy_qp(ibv_qp* qp) override { return ::ibv_destroy_qp(qp); }

  int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) override {
    return ::ibv_post_send(qp, wr, bad_wr);
  }
  int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) override {
    return ::ibv_post_recv(qp, wr, bad_wr);
  }
  int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) override {
    return ::ibv_post_srq_recv(srq, wr, bad_wr);
  }
  int poll_cq(ibv_cq* cq, int entries_max, ibv_wc* wc) override {
    return ::ibv_poll_cq(cq, entries_max, wc);
  }
  int poll_async_event(ibv_context* context, ibv_async_event* event) override {
    pollfd ready{context->async_fd, POLLIN, 0};
    if (::poll(&ready, 1, 0) <= 0) return EAGAIN;
    if (::ibv_get_async_event(context, event) != 0) return errno != 0 ? errno : EAGAIN;
    ibv_async_event copy = *event;
    ::ibv_ack_async_event(event);
    *event = copy;
    return 0;
  }
};

}  // namespace

verbs_t& get_real_verbs() {
  static real_verbs_t verbs;
  return verbs;
}

}  // namespace lci::backend::ibv
