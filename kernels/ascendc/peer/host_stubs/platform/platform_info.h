// Stand-in for CANN's closed platform/platform_info.h: the PlatformInfoManager that asc-devkit's
// PlatformAscendCManager (a singleton over the installed SoC files) calls. The peer never uses that
// singleton (it hands PlatformAscendC its own table), so these do nothing.
#ifndef GNMS_PEER_PLATFORM_INFO_H
#define GNMS_PEER_PLATFORM_INFO_H
#include <string>
#include "platform/platform_infos_def.h"
namespace fe {
class PlatformInfoManager {
 public:
  static PlatformInfoManager &Instance() {
    static PlatformInfoManager manager;
    return manager;
  }
  int InitRuntimePlatformInfos(const std::string &) { return 0; }
  int GetRuntimePlatformInfosByDevice(int, PlatFormInfos &) { return 0; }
};
}  // namespace fe
#endif
