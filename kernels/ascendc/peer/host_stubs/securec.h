// Stand-in for libboundscheck's securec.h (not in the CANN checkouts): the few functions metadef
// and asc-devkit's host code call, with their bounds checks, so that the peer's host side links.
#ifndef GNMS_PEER_SECUREC_H
#define GNMS_PEER_SECUREC_H
#include <cstdarg>
#include <cstdio>
#include <cstring>
typedef int errno_t;
#ifndef SECUREC_MEM_MAX_LEN
#define SECUREC_MEM_MAX_LEN 0x7fffffffUL
#endif
#ifndef EOK
#define EOK 0
#endif
inline errno_t memset_s(void *dest, size_t destMax, int c, size_t count) {
  if (dest == nullptr || count > destMax) return 1;
  std::memset(dest, c, count);
  return EOK;
}
inline errno_t memcpy_s(void *dest, size_t destMax, const void *src, size_t count) {
  if (dest == nullptr || src == nullptr || count > destMax) return 1;
  std::memmove(dest, src, count);
  return EOK;
}
inline errno_t strcpy_s(char *dest, size_t destMax, const char *src) {
  if (dest == nullptr || src == nullptr || std::strlen(src) + 1 > destMax) return 1;
  std::memcpy(dest, src, std::strlen(src) + 1);
  return EOK;
}
inline errno_t strncpy_s(char *dest, size_t destMax, const char *src, size_t count) {
  if (dest == nullptr || src == nullptr) return 1;
  size_t n = std::strlen(src) < count ? std::strlen(src) : count;
  if (n + 1 > destMax) return 1;
  std::memcpy(dest, src, n);
  dest[n] = '\0';
  return EOK;
}
inline int vsnprintf_s(char *dest, size_t destMax, size_t count, const char *format, va_list args) {
  (void)count;
  return std::vsnprintf(dest, destMax, format, args);
}
inline int snprintf_s(char *dest, size_t destMax, size_t count, const char *format, ...) {
  va_list args;
  va_start(args, format);
  const int n = vsnprintf_s(dest, destMax, count, format, args);
  va_end(args);
  return n;
}
inline int sprintf_s(char *dest, size_t destMax, const char *format, ...) {
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(dest, destMax, format, args);
  va_end(args);
  return n;
}
#endif  // GNMS_PEER_SECUREC_H
