// Launches one of CANN's unmodified 910B kernels (an ops-nn op_kernel file, compiled against the twin
// in its own translation unit by tests/cann_peer.py) on the CPU twin, with the tiling bytes CANN's
// own tiling computed (cann_tiling_host.cc).
//
// tests/cann_peer.py compiles this file once per operator with two macros from the operator's
// description: GNMS_PEER_ENTRY, the kernel's extern "C" entry, and GNMS_PEER_TENSORS, how many tensor
// arguments come before its workspace and tiling (inputs, then outputs, as in its OpDef).
//
// What the launch hands the kernel, as the framework does on the device: the tensors, a GM copy of
// the tiling, and the workspace. The tiling copy is zero-padded to whole 32-byte blocks: on the
// device the kernel reads sizeof(its tiling struct) in 32-byte bursts (asc-devkit tools/build/
// asc_op_compile_base/asc_op_compiler/get_op_tiling.py, get_tiling_data_func: len_burst =
// (all_bytes + 31) / 32), so the framework's tiling buffer holds at least that much.
// On the device the workspace starts with the 16 MiB system workspace
// (PlatformAscendC::GetLibApiWorkSpaceSize on the 910B) and GetUserWorkspace() skips it; the twin's
// GetUserWorkspace returns its argument, so the launch passes the user part only (the tiling's
// workspace size less the system part, which the caller gives). It starts as quiet NaNs, as our own
// launches' workspace does (twin_launch.cc): the kernel must clear what it adds into.
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernel_operator.h"
#include "twin_c_api.h"

#if !defined(GNMS_PEER_ENTRY) || !defined(GNMS_PEER_TENSORS)
#error "tests/cann_peer.py defines GNMS_PEER_ENTRY and GNMS_PEER_TENSORS from the operator's description"
#endif

namespace {
template <size_t>
using GmArg = GM_ADDR;
template <typename Seq>
struct EntryType;
template <size_t... I>
struct EntryType<std::index_sequence<I...>> {
  using type = void(GmArg<I>..., GM_ADDR workspace, GM_ADDR tiling);
};
}  // namespace

// The kernel's entry: GNMS_PEER_TENSORS tensors, the workspace, the tiling.
extern "C" EntryType<std::make_index_sequence<GNMS_PEER_TENSORS>>::type GNMS_PEER_ENTRY;

namespace {
template <size_t... I>
void CallEntry(void *const *buffers, GM_ADDR workspace, GM_ADDR tiling, std::index_sequence<I...>) {
  GNMS_PEER_ENTRY(static_cast<GM_ADDR>(buffers[I])..., workspace, tiling);
}
}  // namespace

#define GNMS_PEER_EXPORT extern "C" __attribute__((visibility("default")))

// buffers/bytes/names: the GNMS_PEER_TENSORS tensors. policy: the twin's scheduling policy (low byte)
// and pipe execution (next byte), as GnmsTwinLaunch (twin_c_api.h) takes them; bit 16: no hazard
// checks; bit 19: Config::cannCompat.
// Returns 0, or 1 with the twin's fault in `error`.
GNMS_PEER_EXPORT int GnmsPeerLaunch(void *const *buffers, const int64_t *bytes, const char *const *names,
                                    const uint8_t *tiling, int64_t tilingBytes, int64_t tilingKey, int64_t blockDim,
                                    int64_t userWorkspaceBytes, int64_t ubBytes, int64_t coreNum, int policy,
                                    uint64_t seed, char *error, int errorLen) {
  std::vector<uint8_t> tilingGm(static_cast<size_t>((tilingBytes + 31) / 32 * 32), 0);
  std::copy(tiling, tiling + tilingBytes, tilingGm.begin());
  std::vector<float> workspace(static_cast<size_t>(userWorkspaceBytes / 4) + 1, std::numeric_limits<float>::quiet_NaN());
  std::vector<twin::GmRegion> regions;
  for (int i = 0; i < GNMS_PEER_TENSORS; ++i) {
    if (buffers[i] != nullptr && bytes[i] > 0) regions.push_back({buffers[i], static_cast<size_t>(bytes[i]), names[i]});
  }
  regions.push_back({tilingGm.data(), tilingGm.size(), "tiling"});
  if (userWorkspaceBytes > 0) regions.push_back({workspace.data(), static_cast<size_t>(userWorkspaceBytes), "workspace"});
  const twin::Config config = twin::api::LaunchConfig(ubBytes, coreNum, policy, seed);
  std::string message;
  const int status = twin::Launch(
      config, blockDim, tilingKey, regions,
      [&] {
        CallEntry(buffers, reinterpret_cast<GM_ADDR>(workspace.data()), tilingGm.data(),
                  std::make_index_sequence<GNMS_PEER_TENSORS>{});
      },
      &message);
  twin::api::CopyError(message.c_str(), error, errorLen);
  return status;
}
// Its cost constants and counters: twin_c_api.cc, linked into this library too.
