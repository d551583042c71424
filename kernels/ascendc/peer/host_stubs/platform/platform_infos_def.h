// Stand-in for CANN's closed libplatform (platform/platform_infos_def.h): fe::PlatFormInfos as a
// table of (label, key) -> value strings, which is all asc-devkit's PlatformAscendC reads from it
// (GetPlatformResWithLock), plus the local-memory sizes by type. The peer driver fills it with the
// 910B values CANN's tiling unit tests use (tests/cann_peer.py lists them).
#ifndef GNMS_PEER_PLATFORM_INFOS_DEF_H
#define GNMS_PEER_PLATFORM_INFOS_DEF_H
#include <cstdint>
#include <map>
#include <string>
namespace fe {
// The order of platform_ascendc::CoreMemType, which PlatformAscendC casts to this type.
enum class LocalMemType { L0_A = 0, L0_B = 1, L0_C = 2, L1 = 3, L2 = 4, UB = 5, HBM = 6, RESERVED };

class OptionalInfos {};

class PlatFormInfos {
 public:
  bool Init() { return true; }
  bool GetPlatformResWithLock(const std::string &label, const std::string &key, std::string &value) {
    auto l = table_.find(label);
    if (l == table_.end()) return false;
    auto k = l->second.find(key);
    if (k == l->second.end()) return false;
    value = k->second;
    return true;
  }
  bool GetPlatformRes(const std::string &label, const std::string &key, std::string &value) {
    return GetPlatformResWithLock(label, key, value);
  }
  void SetPlatformResWithLock(const std::string &label, std::map<std::string, std::string> &values) {
    for (const auto &kv : values) table_[label][kv.first] = kv.second;
  }
  void SetPlatformRes(const std::string &label, std::map<std::string, std::string> &values) {
    SetPlatformResWithLock(label, values);
  }
  void Set(const std::string &label, const std::string &key, const std::string &value) { table_[label][key] = value; }
  // Used by PlatformAscendCManager's singleton only, which the peer does not use.
  void SetCoreNumByCoreType(const std::string &) {}
  uint32_t GetCoreNum() const { return Number("SoCInfo", "ai_core_cnt"); }
  // The AICoreSpec sizes by memory type (what libplatform reads from the SoC's ini file).
  void GetLocalMemSize(const LocalMemType &type, uint64_t &size) const {
    static const char *const kKeys[] = {"l0_a_size", "l0_b_size", "l0_c_size", "l1_size", "l2_size", "ub_size",
                                        "hbm_size"};
    const int i = static_cast<int>(type);
    size = i >= 0 && i < 7 ? Number("AICoreSpec", kKeys[i]) : 0;
  }
  void GetLocalMemBw(const LocalMemType &, uint64_t &bw) const { bw = 0; }

 private:
  uint64_t Number(const std::string &label, const std::string &key) const {
    auto l = table_.find(label);
    if (l == table_.end()) return 0;
    auto k = l->second.find(key);
    return k == l->second.end() ? 0 : std::stoull(k->second);
  }
  std::map<std::string, std::map<std::string, std::string>> table_;
};
}  // namespace fe
#endif
