// CPU twin: the vector math the GroupNormSiluMs forward kernel adds to the API subset of
// kernel_operator.h (which includes this header at its end). Kept apart so that changes to
// the core twin and to these functions do not collide.
//
// Signatures are the count forms ("tensor 前n个数据计算") of asc-devkit
// include/basic_api/kernel_operator_vec_unary_intf.h (Exp, Sqrt) and
// kernel_operator_vec_binary_intf.h (Div) on A2/A3 (no ExpConfig/DivConfig/SqrtConfig
// template parameter: those exist only for __NPU_ARCH__ 3510/5102):
//   template <typename T> void Exp(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count);
//   template <typename T> void Sqrt(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count);
//   template <typename T> void Div(const LocalTensor<T>& dst, const LocalTensor<T>& src0,
//                                  const LocalTensor<T>& src1, const int32_t& count);
// Rules the twin enforces, as for the other vector instructions (detail::Elementwise): fp32
// only (the kernels compute in fp32; A2 also takes half), UB operands 32-byte aligned, inside
// their buffers, count >= 0, V pipe. Results are the correctly rounded libm/IEEE values;
// the device's Exp/Sqrt/Div are documented to within 1 ulp (Exp.md, Sqrt.md, Div.md
// "最大精度误差"), so the twin is exact where the device may differ by an ulp.
#ifndef GNMS_TWIN_KERNEL_OPERATOR_FORWARD_MATH_H
#define GNMS_TWIN_KERNEL_OPERATOR_FORWARD_MATH_H

namespace AscendC {

template <typename T>
inline void Exp(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t &count) {
  static_assert(std::is_same<T, float>::value, "the twin models fp32 Exp only");
  detail::Elementwise("Exp", dst, {&src}, count, [](const auto &in, int i) { return std::exp(in[0][i]); });
}

template <typename T>
inline void Sqrt(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t &count) {
  static_assert(std::is_same<T, float>::value, "the twin models fp32 Sqrt only");
  detail::Elementwise("Sqrt", dst, {&src}, count, [](const auto &in, int i) { return std::sqrt(in[0][i]); });
}

template <typename T>
inline void Div(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,
                const int32_t &count) {
  static_assert(std::is_same<T, float>::value, "the twin models fp32 Div only");
  detail::Elementwise("Div", dst, {&src0, &src1}, count, [](const auto &in, int i) { return in[0][i] / in[1][i]; });
}

}  // namespace AscendC

#endif  // GNMS_TWIN_KERNEL_OPERATOR_FORWARD_MATH_H
