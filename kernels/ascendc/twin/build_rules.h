// CANN build rules that the CPU twin enforces at the kernel entry, so that a kernel the
// real build (or the real hardware) would refuse is refused here too.
//
//  * TILING_KEY_IS(k): CANN's build scans the *preprocessed* kernel for
//    `g_tilingKey == (<digits>` (asc-devkit tools/build/asc_op_compile_base/adapter/
//    kernel_info_infer.py, find_tilingkey); anything else, e.g. a constexpr variable, is a
//    build error ("can not be processed as numeric variables in the precompilation
//    phase"), and text such as `1 + 1` or `0x10` would be read as the wrong key. The key
//    must also be a non-negative integer (asc-devkit docs/zh/api/SIMD-API/基础API/
//    Kernel-Tiling/TILING_KEY_IS.md). The twin expands k exactly as the preprocessor
//    does and refuses to compile unless the expanded text is a decimal literal (with
//    an optional u/U/l/L suffix).
//  * KERNEL_TASK_TYPE(key, type) takes the same literal key (CANN pastes it into the name
//    __enable_feature_for_compile_<key> and reads the digits back: kernel_info_infer.py,
//    find_kernel_type).
//  * KERNEL_TASK_TYPE_DEFAULT / KERNEL_TASK_TYPE record the declared kernel type of the
//    block (names and order of asc-devkit's KernelMetaType, impl/basic_api/utils/
//    kernel_utils_macros.h). SyncAll fails the launch under KERNEL_TYPE_AIV_ONLY or
//    KERNEL_TYPE_AIC_ONLY: for those types the hardware does not start the cross-core
//    scheduler, so a hardware SyncAll cannot work (asc-devkit docs, SyncAll.md
//    constraints and CrossCoreSetFlag(ISASI).md; a pure-vector kernel uses
//    KERNEL_TYPE_MIX_AIV_1_0, or declares nothing and lets the build detect SyncAll).
//
// kernel_operator.h includes this header; twin_runtime.cc calls CheckSyncAllKernelType().
#ifndef GNMS_TWIN_BUILD_RULES_H
#define GNMS_TWIN_BUILD_RULES_H

#include <cstdint>
#include <string>

#include "twin_runtime.h"

enum KernelMetaType : uint8_t {
  KERNEL_TYPE_AIV_ONLY,
  KERNEL_TYPE_AIC_ONLY,
  KERNEL_TYPE_MIX_AIV_1_0,
  KERNEL_TYPE_MIX_AIC_1_0,
  KERNEL_TYPE_MIX_AIC_1_1,
  KERNEL_TYPE_MIX_AIC_1_2,
  KERNEL_TYPE_AICORE,
  KERNEL_TYPE_VECTORCORE,
  KERNEL_TYPE_MIX_AICORE,
  KERNEL_TYPE_MIX_VECTOR_CORE,
  KERNEL_TYPE_MAX,
};

namespace twin::rules {

// ---------------------------------------------------------------- tiling keys
constexpr bool IsDigit(char c) { return c >= '0' && c <= '9'; }
constexpr bool IsIntegerSuffix(char c) { return c == 'u' || c == 'U' || c == 'l' || c == 'L'; }

// True when `text` (the macro-expanded, stringised key) is digits followed by at most
// three u/U/l/L suffix letters: what CANN's `g_tilingKey == \((-?\d+)` scan reads as the
// whole key. Parentheses, signs, hex, casts, names and expressions are refused.
constexpr bool IsNumericKeyText(const char *text) {
  int i = 0;
  while (IsDigit(text[i])) ++i;
  if (i == 0) return false;
  int suffix = 0;
  while (IsIntegerSuffix(text[i]) && suffix < 3) {
    ++i;
    ++suffix;
  }
  return text[i] == '\0';
}

template <bool keyIsNumericLiteral>
inline bool TilingKeyIs(uint64_t key) {
  static_assert(keyIsNumericLiteral,
                "TILING_KEY_IS(key): after macro expansion the key must be a non-negative decimal literal "
                "(CANN's build reads the preprocessed kernel; a constexpr variable, expression, cast or hex "
                "number is refused or misread). Use a literal or a #define expanding to one.");
  return static_cast<uint64_t>(::twin::TilingKey()) == key;
}

// ---------------------------------------------------------------- kernel type
struct DeclaredType {
  bool declared = false;
  int type = KERNEL_TYPE_MAX;
  const char *name = "";
};

// Per block: every block of a launch runs on its own thread and executes the entry's
// KERNEL_TASK_TYPE_DEFAULT itself, so the record starts empty for each launch.
inline DeclaredType &Declared() {
  static thread_local DeclaredType declared;
  return declared;
}

inline void DeclareDefault(int type, const char *name) {
  DeclaredType &d = Declared();
  if (!d.declared) d = DeclaredType{true, type, name};  // a per-key KERNEL_TASK_TYPE takes precedence
}

template <bool keyIsNumericLiteral>
inline void DeclareForKey(uint64_t key, int type, const char *name) {
  // CANN pastes the key into a symbol name (__enable_feature_for_compile_<key>) and reads
  // it back as digits: the same literal rule as TILING_KEY_IS.
  static_assert(keyIsNumericLiteral,
                "KERNEL_TASK_TYPE(key, type): after macro expansion the key must be a non-negative decimal "
                "literal, as for TILING_KEY_IS.");
  if (static_cast<uint64_t>(::twin::TilingKey()) == key) Declared() = DeclaredType{true, type, name};
}

// Called by the twin's SyncAll (twin_runtime.cc).
inline void CheckSyncAllKernelType() {
  const DeclaredType &d = Declared();
  if (d.declared && (d.type == KERNEL_TYPE_AIV_ONLY || d.type == KERNEL_TYPE_AIC_ONLY)) {
    ::twin::Fail(std::string("SyncAll in a kernel declared ") + d.name +
                 ": with an AIV_ONLY/AIC_ONLY kernel type the hardware does not start the cross-core scheduler, "
                 "so the SyncAll barrier cannot work (it hangs or does not synchronise). Declare "
                 "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0) for a vector kernel, or no type.");
  }
}

}  // namespace twin::rules

#define GNMS_TWIN_STRINGIZE_(x) #x
#define GNMS_TWIN_EXPANDED_TEXT_(x) GNMS_TWIN_STRINGIZE_(x)

#define TILING_KEY_IS(key) \
  (::twin::rules::TilingKeyIs<::twin::rules::IsNumericKeyText(GNMS_TWIN_EXPANDED_TEXT_(key))>((key)))
#define KERNEL_TASK_TYPE_DEFAULT(type) ::twin::rules::DeclareDefault((type), #type)
#define KERNEL_TASK_TYPE(key, type) \
  ::twin::rules::DeclareForKey<::twin::rules::IsNumericKeyText(GNMS_TWIN_EXPANDED_TEXT_(key))>((key), (type), #type)

#endif  // GNMS_TWIN_BUILD_RULES_H
