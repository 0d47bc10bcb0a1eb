// verbs_t: the one narrow table through which the ibv backend reaches
// libibverbs (docs/backends/ibv.md, "The verbs table").
//
// Every verb the backend uses is a method here, with the real types of
// <infiniband/verbs.h> and libibverbs' own conventions, so the backend source
// reads as verbs code and runs unchanged over either implementation:
//   real_verbs_t (ibv_verbs_real.hpp, --config=ibv): forwards to libibverbs.
//   emu_fabric_t::verbs(hca) (backends/ibv_emu/ibv_emu_fabric.hpp, every
//     build): an emulated device on a seeded, virtual-time wire, which
//     follows the verbs spec where the backend relies on it (QP state
//     machine, queue depths, RNR, CQ overrun, inline limit,
//     rkey/bounds/access checks, RC ordering).
// The backend never calls an ibv_* function (nor the inline ones of
// verbs.h, which dispatch through ibv_context::ops) except through this
// table, and never reads an object's field the table did not fill (the
// emulation fills the public fields: qp_num, state, lkey, rkey, ...).
//
// Conventions (libibverbs'): calls that return a pointer return nullptr on
// failure and set errno; calls that return int return 0 or an errno value
// (post_*: the errno value, with *bad_wr naming the first refused work
// request; the ones before it are posted); poll_cq returns how many
// completions it wrote, or a negative value when the CQ is broken.
//
// Thread safety: as libibverbs: every method may be called from any thread;
//                the real library locks per QP/CQ/SRQ, the emulation per
//                fabric. The backend still serialises per object with its
//                own try-locks (paper §4.2.3).
// Blocking:      never on the data path (post_*, poll_cq); control calls
//                (open, create, modify, reg_mr) may block in the kernel
//                with the real library.
// Ownership:     objects returned belong to the caller until passed to the
//                matching destroy/dealloc/close/dereg call.
// Allocation:    control calls allocate; post_* and poll_cq do not (the
//                real library); the emulation allocates a payload copy per
//                inline send.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

namespace lci::backend::ibv {

class verbs_t {
 public:
  virtual ~verbs_t() = default;
  // "libibverbs" or "emulated": for messages.
  virtual const char* get_name() const = 0;

  // Devices.
  virtual ibv_device** get_device_list(int* devices_count) = 0;
  virtual void free_device_list(ibv_device** devices) = 0;
  virtual const char* get_device_name(ibv_device* device) = 0;
  virtual ibv_context* open_device(ibv_device* device) = 0;
  virtual int close_device(ibv_context* context) = 0;
  virtual int query_device(ibv_context* context, ibv_device_attr* device_attr) = 0;
  virtual int query_port(ibv_context* context, std::uint8_t port_num,
                         ibv_port_attr* port_attr) = 0;
  virtual int query_gid(ibv_context* context, std::uint8_t port_num, int index,
                        ibv_gid* gid) = 0;
  // One GID table entry with its type (IBV_GID_TYPE_IB, _ROCE_V1, _ROCE_V2);
  // an empty or missing entry is an error (libibverbs: ENODATA or EINVAL).
  virtual int query_gid_ex(ibv_context* context, std::uint32_t port_num, std::uint32_t gid_index,
                           ibv_gid_entry* entry, std::uint32_t flags) = 0;
  // The extended attributes; the backend reads odp_caps (on-demand paging).
  virtual int query_device_ex(ibv_context* context, const ibv_query_device_ex_input* input,
                              ibv_device_attr_ex* device_attr) = 0;

  // Protection and thread domains.
  virtual ibv_pd* alloc_pd(ibv_context* context) = 0;
  virtual int dealloc_pd(ibv_pd* pd) = 0;
  virtual ibv_td* alloc_td(ibv_context* context, ibv_td_init_attr* init_attr) = 0;
  virtual int dealloc_td(ibv_td* td) = 0;
  // A parent domain is a PD (dealloc_pd frees it) that binds its QPs to a TD.
  virtual ibv_pd* alloc_parent_domain(ibv_context* context,
                                      ibv_parent_domain_init_attr* attr) = 0;

  // Memory regions. `access`: IBV_ACCESS_* flags.
  virtual ibv_mr* reg_mr(ibv_pd* pd, void* address, std::size_t length, int access) = 0;
  virtual int dereg_mr(ibv_mr* mr) = 0;
  // Advice on ranges of on-demand (IBV_ACCESS_ON_DEMAND) MRs of `pd`: a
  // prefetch of their pages (IBV_ADVISE_MR_ADVICE_PREFETCH, _WRITE,
  // _NO_FAULT); 0 or an errno value (EOPNOTSUPP: the provider has none).
  virtual int advise_mr(ibv_pd* pd, ibv_advise_mr_advice advice, std::uint32_t flags,
                        ibv_sge* sg_list, std::uint32_t num_sge) = 0;

  // Completion queue (no channel, vector 0).
  virtual ibv_cq* create_cq(ibv_context* context, int cqe) = 0;
  virtual int destroy_cq(ibv_cq* cq) = 0;

  // Shared receive queue.
  virtual ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* init_attr) = 0;
  virtual int destroy_srq(ibv_srq* srq) = 0;

  // Queue pairs. create_qp writes the capabilities granted back into
  // init_attr->cap, as libibverbs does.
  virtual ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* init_attr) = 0;
  virtual int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) = 0;
  virtual int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask,
                       ibv_qp_init_attr* init_attr) = 0;
  virtual int destroy_qp(ibv_qp* qp) = 0;

  // Data path.
  virtual int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) = 0;
  virtual int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) = 0;
  virtual int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) = 0;
  virtual int poll_cq(ibv_cq* cq, int entries_max, ibv_wc* wc) = 0;

  // Asynchronous events (a responder QP that a remote access error moved to
  // ERR, a CQ error, ...), without waiting: 0 and *event, already
  // acknowledged, or EAGAIN when none is pending. (libibverbs:
  // ibv_get_async_event on the context's async_fd, made non-blocking, and
  // ibv_ack_async_event.)
  virtual int poll_async_event(ibv_context* context, ibv_async_event* event) = 0;
};

}  // namespace lci::backend::ibv
