// Stand-in for what the bisheng (CCE) compiler provides built in to AscendC device code, for a
// g++ -fsyntax-only check of our kernels against the real asc-devkit headers
// (tests/test_ascendc_real_headers.py, docs/ascend-real-headers.md). Written by us: bisheng is
// closed; the names below are the ones asc-devkit's dav-c220 sources use.
//
// What it declares and why it cannot make the check of OUR code more lenient:
//  * the address-space and kernel qualifiers (__gm__, __ubuf__, __aicore__, ...) as nothing:
//    g++ has no address spaces. (asc-devkit's own CPU-debug build does the same in tikicpulib.)
//  * the hardware enums (pipe_t, event_t, ...) and register types asc-devkit passes to the
//    intrinsics. Our kernels use the typed AscendC enums (HardEvent, RoundMode, ...), which are
//    asc-devkit's own, not these.
//  * the intrinsics (vadd, copy_gm_to_ubuf, set_flag, ...), each as a function template taking
//    any arguments: their exact signatures are bisheng's and unpublished. Only asc-devkit's
//    implementation layer calls them; every API our kernels call (DataCopyPad, SetFlag<...>,
//    ReduceSum, Cast, TQue::AllocTensor, ...) is asc-devkit's real declaration, checked by g++
//    exactly. test_ascendc_real_headers.py checks that no kernel calls one of these intrinsics
//    directly, since such a call would be checked by nobody.
#ifndef MS_GROUPNORM_REALHEADER_CCE_BUILTINS_H
#define MS_GROUPNORM_REALHEADER_CCE_BUILTINS_H

#include <cstdint>

#include "kernel_bf16.h"  // bisheng's built-in bfloat16_t (tikicpulib's header name in CPU-debug mode)
#include "kernel_fp16.h"  // bisheng's built-in half

#define __aicore__
#define __global__
#define __gm__
#define __ubuf__
#define __cbuf__
#define __ca__
#define __cb__
#define __cc__
#define __fbuf__
#define __ssbuf__
#define __biasbuf__
#define __local_mem__
#define __simd_callee__
#define __simd_vf__
#define __simt_gm__
#define __simt_callee__
#define __host__
#define __host_aicore__
#define __sync_alias__
#define __sync_noalias__
#define __check_sync_alias__
#define __disable_kernel_type_autoinfer__
#define __BLOCK_LOCAL__
#define __WORKGROUP_LOCAL__
// pipe annotations of intrinsic declarations in asc-devkit: __in_pipe__(V) etc.
#define __in_pipe__(...)
#define __out_pipe__(...)
#define __inout_pipe__(...)

// Hardware pipes and event ids, as the intrinsics take them (HardEvent/TEventID map onto these).
enum pipe_t { PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_MTE4, PIPE_MTE5, PIPE_V2,
              PIPE_FIX, PIPE_NUM };
enum event_t { EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };
enum class mem_dsb_t { DSB_ALL = 0, DSB_DDR, DSB_OUT, DSB_UB, DSB_SEQ };
enum class mem_t { L1 = 0, L0A, L0B, L0C, UB, BT };
enum class pad_t { PAD_NONE = 0, PAD_MODE1, PAD_MODE2, PAD_MODE3, PAD_MODE4, PAD_MODE5, PAD_MODE6, PAD_MODE7, PAD_MODE8 };
enum class cache_line_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class dcci_dst_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };
enum class Order_t { VALUE_INDEX = 0, INDEX_VALUE, ONLY_VALUE, ONLY_INDEX };
enum class QuantMode_t {
  NoQuant = 0, F322F16, F322BF16, DEQF16, VDEQF16, QF322B8_PRE, VQF322B8_PRE, REQ8, VREQ8, REQ4, VREQ4, DEQS16,
  VDEQS16, QF322F16_PRE, VQF322F16_PRE, QF322BF16_PRE, VQF322BF16_PRE, QS322BF16_PRE, VQS322BF16_PRE, QF322HIF8_PRE,
  VQF322HIF8_PRE, QF322HIF8_PRE_HYBRID, VQF322HIF8_PRE_HYBRID, QF322FP8_PRE, VQF322FP8_PRE, QF322F32_PRE,
  VQF322F32_PRE, QF162B8_PRE, VQF162B8_PRE, QF162S4_PRE, VQF162S4_PRE, QF162S16_PRE, VQF162S16_PRE
};
enum atomic_type_t { ATOMIC_NONE = 0, ATOMIC_F32, ATOMIC_F16, ATOMIC_S16, ATOMIC_S32, ATOMIC_S8, ATOMIC_BF16 };
enum atomic_op_t { ATOMIC_SUM = 0, ATOMIC_MAX, ATOMIC_MIN };
enum addr_cal_mode_t { VA0 = 0, VA1, VA2, VA3, VA4, VA5, VA6, VA7 };  // address registers of vtranspose/vnchwconv
enum addr_step_t { inc = 0, dec };                                    // load_cbuf_to_* address direction
enum va_reg_half_t { L128 = 0, H128 };                                // vld_va_reg halves

// Vector registers of the register-compute API (Ascend 950): its interface headers are included on
// every arch and name these types; nothing of it is instantiated for dav-c220.
struct vector_bool {}; struct vector_align {}; struct vector_address {};
struct vector_s4x2 {}; struct vector_s8 {}; struct vector_u8 {}; struct vector_s16 {}; struct vector_u16 {};
struct vector_s32 {}; struct vector_u32 {}; struct vector_s64 {}; struct vector_u64 {};
struct vector_f16 {}; struct vector_bf16 {}; struct vector_f32 {};
struct vector_hif8 {}; struct vector_f8e8m0 {}; struct vector_f8e5m2 {}; struct vector_f8e4m3 {};
struct vector_f4e2m1x2 {}; struct vector_f4e1m2x2 {};

// Intrinsics asc-devkit's implementation calls (see the header comment on why "any arguments").
#define ASC_INTRINSIC(name) template <typename... Args> void name(Args...);
#define ASC_GETTER(name) template <typename... Args> int64_t name(Args...);
ASC_INTRINSIC(cast_f16_to_f32) ASC_INTRINSIC(copy_cbuf_to_bt) ASC_INTRINSIC(copy_cbuf_to_fbuf)
ASC_INTRINSIC(copy_cbuf_to_gm) ASC_INTRINSIC(copy_gm_to_cbuf) ASC_INTRINSIC(copy_gm_to_cbuf_multi_nd2nz_b16)
ASC_INTRINSIC(copy_gm_to_cbuf_multi_nd2nz_b32s) ASC_INTRINSIC(copy_gm_to_cbuf_multi_nd2nz_b8)
ASC_INTRINSIC(copy_gm_to_ubuf) ASC_INTRINSIC(copy_gm_to_ubuf_align_b16) ASC_INTRINSIC(copy_gm_to_ubuf_align_b32)
ASC_INTRINSIC(copy_gm_to_ubuf_align_b8) ASC_INTRINSIC(copy_matrix_cbuf_to_cc)
ASC_INTRINSIC(copy_matrix_cc_to_cbuf) ASC_INTRINSIC(copy_matrix_cc_to_gm) ASC_INTRINSIC(copy_ubuf_to_gm)
ASC_INTRINSIC(copy_ubuf_to_gm_align_b16) ASC_INTRINSIC(copy_ubuf_to_gm_align_b32)
ASC_INTRINSIC(copy_ubuf_to_gm_align_b8) ASC_INTRINSIC(copy_ubuf_to_ubuf) ASC_INTRINSIC(create_ca_matrix)
ASC_INTRINSIC(create_ca_matrix_bf16) ASC_INTRINSIC(create_cb_matrix) ASC_INTRINSIC(create_cb_matrix_bf16)
ASC_INTRINSIC(create_cbuf_matrix) ASC_INTRINSIC(create_cbuf_matrix_bf16) ASC_INTRINSIC(dc_preload)
ASC_INTRINSIC(dcci) ASC_INTRINSIC(dsb) ASC_INTRINSIC(ffts_cross_core_sync) ASC_INTRINSIC(get_buf)
ASC_INTRINSIC(get_cmpmask) ASC_INTRINSIC(hset_flag) ASC_INTRINSIC(hwait_flag)
ASC_INTRINSIC(img2colv2_cbuf_to_ca) ASC_INTRINSIC(img2colv2_cbuf_to_ca_s4) ASC_INTRINSIC(img2colv2_cbuf_to_cb)
ASC_INTRINSIC(img2colv2_cbuf_to_ub) ASC_INTRINSIC(load_cbuf_to_ca) ASC_INTRINSIC(load_cbuf_to_ca_s4)
ASC_INTRINSIC(load_cbuf_to_ca_transpose) ASC_INTRINSIC(load_cbuf_to_cb) ASC_INTRINSIC(load_cbuf_to_cb_s4)
ASC_INTRINSIC(load_cbuf_to_cb_sp) ASC_INTRINSIC(load_cbuf_to_cb_transpose)
ASC_INTRINSIC(load_cbuf_to_cb_transpose_s4) ASC_INTRINSIC(load_gm_to_ca) ASC_INTRINSIC(load_gm_to_cb)
ASC_INTRINSIC(load_gm_to_cbuf) ASC_INTRINSIC(load_image_to_cbuf) ASC_INTRINSIC(mad) ASC_INTRINSIC(mad_s4)
ASC_INTRINSIC(mad_sp) ASC_INTRINSIC(pipe_barrier) ASC_INTRINSIC(preload) ASC_INTRINSIC(rls_buf)
ASC_INTRINSIC(scatter_vnchwconv_b16) ASC_INTRINSIC(scatter_vnchwconv_b32) ASC_INTRINSIC(scatter_vnchwconv_b8)
ASC_INTRINSIC(set_aipp_spr_0) ASC_INTRINSIC(set_aipp_spr_1) ASC_INTRINSIC(set_aipp_spr_10)
ASC_INTRINSIC(set_aipp_spr_11) ASC_INTRINSIC(set_aipp_spr_12) ASC_INTRINSIC(set_aipp_spr_13)
ASC_INTRINSIC(set_aipp_spr_14) ASC_INTRINSIC(set_aipp_spr_15) ASC_INTRINSIC(set_aipp_spr_16)
ASC_INTRINSIC(set_aipp_spr_17) ASC_INTRINSIC(set_aipp_spr_18) ASC_INTRINSIC(set_aipp_spr_19)
ASC_INTRINSIC(set_aipp_spr_2) ASC_INTRINSIC(set_aipp_spr_20) ASC_INTRINSIC(set_aipp_spr_21)
ASC_INTRINSIC(set_aipp_spr_22) ASC_INTRINSIC(set_aipp_spr_23) ASC_INTRINSIC(set_aipp_spr_24)
ASC_INTRINSIC(set_aipp_spr_3) ASC_INTRINSIC(set_aipp_spr_4) ASC_INTRINSIC(set_aipp_spr_5)
ASC_INTRINSIC(set_aipp_spr_6) ASC_INTRINSIC(set_aipp_spr_7) ASC_INTRINSIC(set_aipp_spr_8)
ASC_INTRINSIC(set_aipp_spr_9) ASC_INTRINSIC(set_atomic_add) ASC_INTRINSIC(set_atomic_bf16)
ASC_INTRINSIC(set_atomic_f16) ASC_INTRINSIC(set_atomic_f32) ASC_INTRINSIC(set_atomic_max)
ASC_INTRINSIC(set_atomic_min) ASC_INTRINSIC(set_atomic_none) ASC_INTRINSIC(set_atomic_s16)
ASC_INTRINSIC(set_atomic_s32) ASC_INTRINSIC(set_atomic_s8) ASC_INTRINSIC(set_cmpmask)
ASC_INTRINSIC(set_condition_flag) ASC_INTRINSIC(set_ctrl) ASC_INTRINSIC(set_data_exp_0)
ASC_INTRINSIC(set_data_exp_1) ASC_INTRINSIC(set_data_exp_2) ASC_INTRINSIC(set_data_exp_3)
ASC_INTRINSIC(set_deqscale) ASC_INTRINSIC(set_ffts_base_addr) ASC_INTRINSIC(set_flag) ASC_INTRINSIC(set_fmatrix)
ASC_INTRINSIC(set_fmatrix_b) ASC_INTRINSIC(set_fpc) ASC_INTRINSIC(set_l0_set_value_bf16)
ASC_INTRINSIC(set_l0_set_value_h) ASC_INTRINSIC(set_l0a_2d) ASC_INTRINSIC(set_l0b_2d) ASC_INTRINSIC(set_l1_2d)
ASC_INTRINSIC(set_l1_3d_size) ASC_INTRINSIC(set_l3d_rpt) ASC_INTRINSIC(set_loop_size_outtoub)
ASC_INTRINSIC(set_loop_size_ubtoout) ASC_INTRINSIC(set_lpcnt) ASC_INTRINSIC(set_lrelu_alpha)
ASC_INTRINSIC(set_mask_count) ASC_INTRINSIC(set_mask_norm) ASC_INTRINSIC(set_mov_pad_val)
ASC_INTRINSIC(set_nd_para) ASC_INTRINSIC(set_pad_val_outtol1) ASC_INTRINSIC(set_pad_val_outtoub)
ASC_INTRINSIC(set_padding) ASC_INTRINSIC(set_pcie_rd_ctrl) ASC_INTRINSIC(set_quant_pre)
ASC_INTRINSIC(set_st_atomic_cfg) ASC_INTRINSIC(set_ub_addr_upper_bound) ASC_INTRINSIC(set_va_reg_sb)
ASC_INTRINSIC(set_vector_mask) ASC_INTRINSIC(st_dev) ASC_INTRINSIC(trap) ASC_INTRINSIC(vabs) ASC_INTRINSIC(vadd)
ASC_INTRINSIC(vaddrelu) ASC_INTRINSIC(vaddreluconv_f162s8) ASC_INTRINSIC(vaddreluconv_f322f16)
ASC_INTRINSIC(vaddreluconv_s162s8) ASC_INTRINSIC(vaddreluconv_vdeqs162b8) ASC_INTRINSIC(vadds)
ASC_INTRINSIC(vand) ASC_INTRINSIC(vaxpy) ASC_INTRINSIC(vbitsort) ASC_INTRINSIC(vbrcb) ASC_INTRINSIC(vcadd)
ASC_INTRINSIC(vcgadd) ASC_INTRINSIC(vcgmax) ASC_INTRINSIC(vcgmin) ASC_INTRINSIC(vcmax) ASC_INTRINSIC(vcmin)
ASC_INTRINSIC(vcmp_eq) ASC_INTRINSIC(vcmp_ge) ASC_INTRINSIC(vcmp_gt) ASC_INTRINSIC(vcmp_le)
ASC_INTRINSIC(vcmp_lt) ASC_INTRINSIC(vcmp_ne) ASC_INTRINSIC(vcmpv_eq) ASC_INTRINSIC(vcmpv_ge)
ASC_INTRINSIC(vcmpv_gt) ASC_INTRINSIC(vcmpv_le) ASC_INTRINSIC(vcmpv_lt) ASC_INTRINSIC(vcmpv_ne)
ASC_INTRINSIC(vcmpvs_eq) ASC_INTRINSIC(vcmpvs_ge) ASC_INTRINSIC(vcmpvs_gt) ASC_INTRINSIC(vcmpvs_le)
ASC_INTRINSIC(vcmpvs_lt) ASC_INTRINSIC(vcmpvs_ne) ASC_INTRINSIC(vconv_bf162f32) ASC_INTRINSIC(vconv_bf162s32a)
ASC_INTRINSIC(vconv_bf162s32c) ASC_INTRINSIC(vconv_bf162s32f) ASC_INTRINSIC(vconv_bf162s32r)
ASC_INTRINSIC(vconv_bf162s32z) ASC_INTRINSIC(vconv_deq) ASC_INTRINSIC(vconv_deqs162b8h)
ASC_INTRINSIC(vconv_deqs162b8l) ASC_INTRINSIC(vconv_f162f32) ASC_INTRINSIC(vconv_f162s16a)
ASC_INTRINSIC(vconv_f162s16c) ASC_INTRINSIC(vconv_f162s16f) ASC_INTRINSIC(vconv_f162s16r)
ASC_INTRINSIC(vconv_f162s16z) ASC_INTRINSIC(vconv_f162s32a) ASC_INTRINSIC(vconv_f162s32c)
ASC_INTRINSIC(vconv_f162s32f) ASC_INTRINSIC(vconv_f162s32r) ASC_INTRINSIC(vconv_f162s32z)
ASC_INTRINSIC(vconv_f162s4) ASC_INTRINSIC(vconv_f162s4a) ASC_INTRINSIC(vconv_f162s4c)
ASC_INTRINSIC(vconv_f162s4f) ASC_INTRINSIC(vconv_f162s4r) ASC_INTRINSIC(vconv_f162s4z)
ASC_INTRINSIC(vconv_f162s8) ASC_INTRINSIC(vconv_f162s8a) ASC_INTRINSIC(vconv_f162s8c)
ASC_INTRINSIC(vconv_f162s8f) ASC_INTRINSIC(vconv_f162s8r) ASC_INTRINSIC(vconv_f162s8z)
ASC_INTRINSIC(vconv_f162u8) ASC_INTRINSIC(vconv_f162u8a) ASC_INTRINSIC(vconv_f162u8c)
ASC_INTRINSIC(vconv_f162u8f) ASC_INTRINSIC(vconv_f162u8r) ASC_INTRINSIC(vconv_f162u8z)
ASC_INTRINSIC(vconv_f322bf16a) ASC_INTRINSIC(vconv_f322bf16c) ASC_INTRINSIC(vconv_f322bf16f)
ASC_INTRINSIC(vconv_f322bf16r) ASC_INTRINSIC(vconv_f322bf16z) ASC_INTRINSIC(vconv_f322f16)
ASC_INTRINSIC(vconv_f322f16a) ASC_INTRINSIC(vconv_f322f16c) ASC_INTRINSIC(vconv_f322f16f)
ASC_INTRINSIC(vconv_f322f16o) ASC_INTRINSIC(vconv_f322f16r) ASC_INTRINSIC(vconv_f322f16z)
ASC_INTRINSIC(vconv_f322f32a) ASC_INTRINSIC(vconv_f322f32c) ASC_INTRINSIC(vconv_f322f32f)
ASC_INTRINSIC(vconv_f322f32r) ASC_INTRINSIC(vconv_f322f32z) ASC_INTRINSIC(vconv_f322s16a)
ASC_INTRINSIC(vconv_f322s16c) ASC_INTRINSIC(vconv_f322s16f) ASC_INTRINSIC(vconv_f322s16r)
ASC_INTRINSIC(vconv_f322s16z) ASC_INTRINSIC(vconv_f322s32a) ASC_INTRINSIC(vconv_f322s32c)
ASC_INTRINSIC(vconv_f322s32f) ASC_INTRINSIC(vconv_f322s32r) ASC_INTRINSIC(vconv_f322s32z)
ASC_INTRINSIC(vconv_f322s64a) ASC_INTRINSIC(vconv_f322s64c) ASC_INTRINSIC(vconv_f322s64f)
ASC_INTRINSIC(vconv_f322s64r) ASC_INTRINSIC(vconv_f322s64z) ASC_INTRINSIC(vconv_s162f16)
ASC_INTRINSIC(vconv_s162f16a) ASC_INTRINSIC(vconv_s162f16c) ASC_INTRINSIC(vconv_s162f16f)
ASC_INTRINSIC(vconv_s162f16r) ASC_INTRINSIC(vconv_s162f16z) ASC_INTRINSIC(vconv_s162f32)
ASC_INTRINSIC(vconv_s322f32) ASC_INTRINSIC(vconv_s322f32a) ASC_INTRINSIC(vconv_s322f32c)
ASC_INTRINSIC(vconv_s322f32f) ASC_INTRINSIC(vconv_s322f32r) ASC_INTRINSIC(vconv_s322f32z)
ASC_INTRINSIC(vconv_s322s16) ASC_INTRINSIC(vconv_s322s64) ASC_INTRINSIC(vconv_s42f16)
ASC_INTRINSIC(vconv_s642f32a) ASC_INTRINSIC(vconv_s642f32c) ASC_INTRINSIC(vconv_s642f32f)
ASC_INTRINSIC(vconv_s642f32r) ASC_INTRINSIC(vconv_s642f32z) ASC_INTRINSIC(vconv_s642s32)
ASC_INTRINSIC(vconv_s82f16) ASC_INTRINSIC(vconv_u82f16) ASC_INTRINSIC(vconv_vdeqs162b8h)
ASC_INTRINSIC(vconv_vdeqs162b8l) ASC_INTRINSIC(vcopy) ASC_INTRINSIC(vcpadd) ASC_INTRINSIC(vdiv)
ASC_INTRINSIC(vector_dup) ASC_INTRINSIC(vexp) ASC_INTRINSIC(vgather) ASC_INTRINSIC(vgatherb)
ASC_INTRINSIC(vld_va_reg) ASC_INTRINSIC(vln) ASC_INTRINSIC(vlrelu) ASC_INTRINSIC(vmadd) ASC_INTRINSIC(vmaddrelu)
ASC_INTRINSIC(vmax) ASC_INTRINSIC(vmaxs) ASC_INTRINSIC(vmin) ASC_INTRINSIC(vmins) ASC_INTRINSIC(vmla)
ASC_INTRINSIC(vmrgsort4) ASC_INTRINSIC(vmul) ASC_INTRINSIC(vmulconv_f162s8) ASC_INTRINSIC(vmulconv_f162u8)
ASC_INTRINSIC(vmuls) ASC_INTRINSIC(vnot) ASC_INTRINSIC(vor) ASC_INTRINSIC(vrec) ASC_INTRINSIC(vreducev2)
ASC_INTRINSIC(vrelu) ASC_INTRINSIC(vrsqrt) ASC_INTRINSIC(vsel) ASC_INTRINSIC(vshl) ASC_INTRINSIC(vshr)
ASC_INTRINSIC(vsqrt) ASC_INTRINSIC(vsub) ASC_INTRINSIC(vsubrelu) ASC_INTRINSIC(vsubreluconv_f162s8)
ASC_INTRINSIC(vsubreluconv_f322f16) ASC_INTRINSIC(vsubreluconv_s162s8) ASC_INTRINSIC(vtranspose)
ASC_INTRINSIC(wait_flag) ASC_INTRINSIC(wait_flag_dev)
ASC_GETTER(get_acc_val) ASC_GETTER(get_arch_ver) ASC_GETTER(get_block_idx) ASC_GETTER(get_block_num)
ASC_GETTER(get_condition_flag) ASC_GETTER(get_coreid) ASC_GETTER(get_ctrl) ASC_GETTER(get_ffts_base_addr)
ASC_GETTER(get_fpc) ASC_GETTER(get_icache_prl_st) ASC_GETTER(get_imm) ASC_GETTER(get_l2_in_main)
ASC_GETTER(get_l2_vaddr_base) ASC_GETTER(get_lpcnt) ASC_GETTER(get_max_min_cnt) ASC_GETTER(get_overflow_status)
ASC_GETTER(get_para_base) ASC_GETTER(get_pc) ASC_GETTER(get_repeat_ceiling) ASC_GETTER(get_rsvd_cnt)
ASC_GETTER(get_st_atomic_cfg) ASC_GETTER(get_stack_phy_base) ASC_GETTER(get_status) ASC_GETTER(get_subblockdim)
ASC_GETTER(get_subblockid) ASC_GETTER(get_thread_dim) ASC_GETTER(get_thread_id) ASC_GETTER(get_vms4_sr)
#undef ASC_INTRINSIC
#undef ASC_GETTER
// Scalar-unit intrinsics with a value asc-devkit uses (bit operations, scalar conversions, an
// uncached GM load): typed, so the value's type is the one asc-devkit relies on.
uint64_t sbitset0(uint64_t x, int64_t idx);
uint64_t sbitset1(uint64_t x, int64_t idx);
int64_t sff0(uint64_t x);
int64_t sff1(uint64_t x);
int64_t bcnt0(uint64_t x);
int64_t bcnt1(uint64_t x);
int64_t clz(uint64_t x);
int64_t sflbits(int64_t x);
half conv_f322f16o(float v);
int32_t conv_f322s32a(float v);
int32_t conv_f322s32c(float v);
int32_t conv_f322s32f(float v);
int32_t conv_f322s32r(float v);
uint64_t ld_dev(uint64_t *src, int16_t offset);
uint32_t ld_dev(uint32_t *src, int16_t offset);
uint16_t ld_dev(uint16_t *src, int16_t offset);
uint8_t ld_dev(uint8_t *src, int16_t offset);
void copy_data_align64(uint8_t *dst, const uint8_t *src, uint64_t bytes);  // the op compiler's tiling copy
int64_t get_sys_cnt();
int64_t __get_entry_sys_cnt();  // v9.0.1's asc_aicore_time_impl.h
// Cross-core barrier entry points the SyncAll/IBSet/IBWait implementations call on dav-c220.
template <typename... Args> void __sync_all_stub(Args...);
template <typename... Args> void __ib_set_stub(Args...);
template <typename... Args> void __ib_wait_stub(Args...);
// Profiling marks (asc-devkit's impl/utils/debug/asc_aicore_time_impl.h).
void asc_prof_start();
void asc_prof_stop();
namespace bisheng {
namespace cce {
void metrics_prof_start();
void metrics_prof_stop();
template <pipe_t pipe, typename... Args> void mark_stamp(Args...);
}  // namespace cce
}  // namespace bisheng

#endif  // MS_GROUPNORM_REALHEADER_CCE_BUILTINS_H
