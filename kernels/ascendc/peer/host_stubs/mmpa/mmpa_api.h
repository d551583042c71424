// Stand-in for CANN's closed OS layer mmpa/mmpa_api.h: the calls metadef's plugin_manager.h makes
// (on Linux) to find the file a function lives in, over dladdr/realpath/strerror.
#ifndef GNMS_PEER_MMPA_API_H
#define GNMS_PEER_MMPA_API_H
#include <dlfcn.h>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#define EN_OK 0
#define EN_ERROR (-1)
#define MMPA_MAX_PATH PATH_MAX
struct mmDlInfo {
  const char *dli_fname;
  void *dli_fbase;
  const char *dli_sname;
  void *dli_saddr;
  size_t dli_size;
  int32_t dli_bind;
  int32_t dli_type;
};
inline int32_t mmDladdr(void *addr, mmDlInfo *info) {
  Dl_info dl;
  if (dladdr(addr, &dl) == 0) return EN_ERROR;
  info->dli_fname = dl.dli_fname;
  info->dli_fbase = dl.dli_fbase;
  info->dli_sname = dl.dli_sname;
  info->dli_saddr = dl.dli_saddr;
  return EN_OK;
}
inline char *mmDlerror() { return dlerror(); }
inline int32_t mmRealPath(const char *path, char *resolved, int32_t) {
  return realpath(path, resolved) == nullptr ? EN_ERROR : EN_OK;
}
inline int32_t mmGetErrorCode() { return errno; }
inline char *mmGetErrorFormatMessage(int32_t code, char *buf, size_t len) {
  std::strncpy(buf, std::strerror(code), len - 1);
  buf[len - 1] = '\0';
  return buf;
}
#endif
