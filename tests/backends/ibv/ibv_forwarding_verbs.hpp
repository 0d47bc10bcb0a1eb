// forwarding_verbs_t: a verbs table (backends/ibv/ibv_verbs.hpp) that
// forwards every call to another one; a test derives from it and overrides
// the calls it wants to change (an empty device list, a post that waits at
// a gate).
//
// Thread safety: as the table it forwards to. Ownership: `base` must
// outlive it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/ibv/ibv_verbs.hpp"

namespace lci::backend::ibv {

class forwarding_verbs_t : public verbs_t {
 public:
  explicit forwarding_verbs_t(verbs_t& base) : base_(base) {}

  const char* get_name() const override { return base_.get_name(); }
  ibv_device** get_device_list(int* count) override { return base_.get_device_list(count); }
  void free_device_list(ibv_device** list) override { base_.free_device_list(list); }
  const char* get_device_name(ibv_device* d) override { return base_.get_device_name(d); }
  ibv_context* open_device(ibv_device* d) override { return base_.open_device(d); }
  int close_device(ibv_context* c) override { return base_.close_device(c); }
  int query_device(ibv_context* c, ibv_device_attr* a) override { return base_.query_device(c, a); }
  int query_port(ibv_context* c, std::uint8_t p, ibv_port_attr* a) override {
    return base_.query_port(c, p, a);
  }
  int query_gid(ibv_context* c, std::uint8_t p, int i, ibv_gid* g) override {
    return base_.query_gid(c, p, i, g);
  }
  int query_gid_ex(ibv_context* c, std::uint32_t p, std::uint32_t i, ibv_gid_entry* e,
                   std::uint32_t f) override {
    return base_.query_gid_ex(c, p, i, e, f);
  }
  int query_device_ex(ibv_context* c, const ibv_query_device_ex_input* i,
                      ibv_device_attr_ex* a) override {
    return base_.query_device_ex(c, i, a);
  }
  ibv_pd* alloc_pd(ibv_context* c) override { return base_.alloc_pd(c); }
  int dealloc_pd(ibv_pd* p) override { return base_.dealloc_pd(p); }
  ibv_td* alloc_td(ibv_context* c, ibv_td_init_attr* a) override { return base_.alloc_td(c, a); }
  int dealloc_td(ibv_td* t) override { return base_.dealloc_td(t); }
  ibv_pd* alloc_parent_domain(ibv_context* c, ibv_parent_domain_init_attr* a) override {
    return base_.alloc_parent_domain(c, a);
  }
  ibv_mr* reg_mr(ibv_pd* p, void* a, std::size_t l, int f) override {
    return base_.reg_mr(p, a, l, f);
  }
  int dereg_mr(ibv_mr* m) override { return base_.dereg_mr(m); }
  int advise_mr(ibv_pd* p, ibv_advise_mr_advice a, std::uint32_t f, ibv_sge* s,
                std::uint32_t n) override {
    return base_.advise_mr(p, a, f, s, n);
  }
  ibv_cq* create_cq(ibv_context* c, int n) override { return base_.create_cq(c, n); }
  int destroy_cq(ibv_cq* q) override { return base_.destroy_cq(q); }
  ibv_srq* create_srq(ibv_pd* p, ibv_srq_init_attr* a) override { return base_.create_srq(p, a); }
  int destroy_srq(ibv_srq* s) override { return base_.destroy_srq(s); }
  ibv_qp* create_qp(ibv_pd* p, ibv_qp_init_attr* a) override { return base_.create_qp(p, a); }
  int modify_qp(ibv_qp* q, ibv_qp_attr* a, int m) override { return base_.modify_qp(q, a, m); }
  int query_qp(ibv_qp* q, ibv_qp_attr* a, int m, ibv_qp_init_attr* i) override {
    return base_.query_qp(q, a, m, i);
  }
  int destroy_qp(ibv_qp* q) override { return base_.destroy_qp(q); }
  int post_send(ibv_qp* q, ibv_send_wr* w, ibv_send_wr** b) override {
    return base_.post_send(q, w, b);
  }
  int post_recv(ibv_qp* q, ibv_recv_wr* w, ibv_recv_wr** b) override {
    return base_.post_recv(q, w, b);
  }
  int post_srq_recv(ibv_srq* s, ibv_recv_wr* w, ibv_recv_wr** b) override {
    return base_.post_srq_recv(s, w, b);
  }
  int poll_cq(ibv_cq* q, int n, ibv_wc* w) override { return base_.poll_cq(q, n, w); }
  int poll_async_event(ibv_context* c, ibv_async_event* e) override {
    return base_.poll_async_event(c, e);
  }

 private:
  verbs_t& base_;
};

}  // namespace lci::backend::ibv
