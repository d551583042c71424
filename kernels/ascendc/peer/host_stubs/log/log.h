// Stand-in for ops-base's log/log.h (no public mirror): the logging and check macros ops-nn's op_host
// code uses. Errors and warnings go to stderr (debug and info are dropped); the checks keep their
// control flow (OP_CHECK_IF runs its expression, usually a return, when the condition holds).
#ifndef GNMS_PEER_LOG_LOG_H
#define GNMS_PEER_LOG_LOG_H
#include <cmath>  // the real header reaches <cmath> through its includes; ops-nn relies on it
#include <cstdio>
#include <sstream>
#include <string>
#include <type_traits>

namespace Ops {
namespace Base {
// The name a log line starts with: a C string as it is, a context (or anything with
// GetNodeName()) by its node name.
inline const char *GetOpInfo(const char *name) { return name; }
inline const char *GetOpInfo(const std::string &name) { return name.c_str(); }
template <typename Context>
inline const char *GetOpInfo(const Context *context) {
  return context == nullptr ? "(null context)" : context->GetNodeName();
}
inline const char *GetSafeStr(const char *s) { return s == nullptr ? "" : s; }
// A shape as "[d0, d1, ...]".
template <typename Shape>
inline std::string ToString(const Shape &shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.GetDimNum(); ++i) out << (i ? ", " : "") << shape.GetDim(i);
  out << "]";
  return out.str();
}
}  // namespace Base
}  // namespace Ops

#ifndef unlikely
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif
#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif

#define GNMS_PEER_LOG(level, name, fmt, ...) \
  std::fprintf(stderr, "[%s] %s: " fmt "\n", level, Ops::Base::GetSafeStr(Ops::Base::GetOpInfo(name)), ##__VA_ARGS__)
#define OP_LOGD(name, fmt, ...) ((void)0)
#define OP_LOGI(name, fmt, ...) ((void)0)
#define OP_LOGW(name, fmt, ...) GNMS_PEER_LOG("WARNING", name, fmt, ##__VA_ARGS__)
#define OP_LOGE(name, fmt, ...) GNMS_PEER_LOG("ERROR", name, fmt, ##__VA_ARGS__)
#define OP_LOGE_WITHOUT_REPORT(name, fmt, ...) OP_LOGE(name, fmt, ##__VA_ARGS__)
#define D_OP_LOGD(name, fmt, ...) ((void)0)
#define D_OP_LOGI(name, fmt, ...) ((void)0)
#define D_OP_LOGW(name, fmt, ...) GNMS_PEER_LOG("WARNING", name, fmt, ##__VA_ARGS__)
#define D_OP_LOGE(name, fmt, ...) GNMS_PEER_LOG("ERROR", name, fmt, ##__VA_ARGS__)
#ifndef REPORT_INNER_ERR_MSG
#define REPORT_INNER_ERR_MSG(code, fmt, ...) std::fprintf(stderr, "[%s] " fmt "\n", code, ##__VA_ARGS__)
#endif
// The parameter-validation messages: whatever their arguments, one error line naming the op.
#define OP_LOGE_FOR_INVALID_DTYPE(name, ...) OP_LOGE(name, "invalid dtype")
#define OP_LOGE_FOR_INVALID_DTYPE_WITH_REASON(name, ...) OP_LOGE(name, "invalid dtype")
#define OP_LOGE_FOR_INVALID_DTYPES_WITH_REASON(name, ...) OP_LOGE(name, "invalid dtypes")
#define OP_LOGE_FOR_INVALID_SHAPE_WITH_REASON(name, ...) OP_LOGE(name, "invalid shape")
#define OP_LOGE_FOR_INVALID_SHAPES_WITH_REASON(name, ...) OP_LOGE(name, "invalid shapes")
#define OP_LOGE_FOR_INVALID_SHAPEDIM(name, ...) OP_LOGE(name, "invalid shape dim")
#define OP_LOGE_FOR_INVALID_SHAPEDIM_WITH_REASON(name, ...) OP_LOGE(name, "invalid shape dim")
#define OP_LOGE_FOR_INVALID_SHAPEDIMS_WITH_REASON(name, ...) OP_LOGE(name, "invalid shape dims")
#define OP_LOGE_FOR_INVALID_SHAPESIZE_WITH_REASON(name, ...) OP_LOGE(name, "invalid shape size")
#define OP_LOGE_FOR_INVALID_SHAPESIZES_WITH_REASON(name, ...) OP_LOGE(name, "invalid shape sizes")
#define OP_LOGE_FOR_INVALID_VALUE(name, ...) OP_LOGE(name, "invalid value")
#define OP_LOGE_FOR_INVALID_VALUE_WITH_REASON(name, ...) OP_LOGE(name, "invalid value")
#define OP_CHECK_IF(cond, log_func, expr) \
  do {                                    \
    if (cond) {                           \
      log_func;                           \
      expr;                               \
    }                                     \
  } while (0)
#define OP_CHECK_NULL_WITH_CONTEXT(context, ptr)        \
  do {                                                  \
    if ((ptr) == nullptr) {                             \
      OP_LOGE(context, "%s is nullptr", #ptr);          \
      return ge::GRAPH_FAILED;                          \
    }                                                   \
  } while (0)
#endif  // GNMS_PEER_LOG_LOG_H
