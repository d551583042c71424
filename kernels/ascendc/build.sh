#!/usr/bin/env bash
# Builds and installs the GroupNormGradMs AscendC operator package on an Ascend machine,
# with the custom_compiler shipped in the MindSpore Ascend wheel, and prints the
# ASCEND_CUSTOM_OPP_PATH to export. On a machine without CANN it stops with a message.
#
# The package is built for every SoC the operator definition lists with AddConfig
# (op_host/group_norm_grad_ms.cpp), read from the source so the two cannot drift apart.
#
# Environment (all optional):
#   ASCEND_HOME_PATH  CANN install (default: /usr/local/Ascend/ascend-toolkit/latest)
#   VENDOR_NAME       vendor directory of the package (default: ms_groupnorm)
#   INSTALL_DIR       where the package is installed (default: kernels/ascendc/build/opp)
#   BUILD_DIR         scratch directory of the build (default: kernels/ascendc/build)
#   PYTHON            python with the MindSpore Ascend wheel (default: python3)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CANN="${ASCEND_HOME_PATH:-/usr/local/Ascend/ascend-toolkit/latest}"
VENDOR="${VENDOR_NAME:-ms_groupnorm}"
INSTALL_DIR="${INSTALL_DIR:-$HERE/build/opp}"
WORK="${BUILD_DIR:-$HERE/build}"
PYTHON="${PYTHON:-python3}"

# AddConfig("<soc>") lines of the OpDef, joined with ';' (custom_compiler's separator).
SOCS="$(grep -o 'AddConfig("[a-z0-9_]*"' "$HERE/op_host/group_norm_grad_ms.cpp" | sed 's/AddConfig("\(.*\)"/\1/' | paste -sd ';' -)"
if [ -z "$SOCS" ]; then
  echo "build.sh: no AddConfig(\"<soc>\") found in op_host/group_norm_grad_ms.cpp." >&2
  exit 2
fi

if [ ! -d "$CANN" ] || { [ ! -f "$CANN/bin/setenv.bash" ] && [ ! -f "$CANN/set_env.sh" ]; }; then
  echo "build.sh: CANN was not found at '$CANN' (no bin/setenv.bash or set_env.sh)." >&2
  echo "This script builds the AscendC operator and needs an Ascend machine with CANN installed;" >&2
  echo "set ASCEND_HOME_PATH to the CANN toolkit. On CPU-only machines use the CPU twin instead" >&2
  echo "(MS_GROUPNORM_BACKEND=ascendc_twin, see kernels/ascendc/README.md)." >&2
  exit 2
fi

MS_DIR="$("$PYTHON" -c 'import mindspore, os; print(os.path.dirname(mindspore.__file__))')"
COMPILER="$MS_DIR/lib/plugin/ascend/custom_compiler"
if [ ! -f "$COMPILER/setup.py" ]; then
  echo "build.sh: $COMPILER/setup.py not found: install the MindSpore Ascend wheel." >&2
  exit 2
fi

rm -rf "$WORK/custom_compiler"
mkdir -p "$WORK" "$INSTALL_DIR"
cp -r "$COMPILER" "$WORK/custom_compiler"
cd "$WORK/custom_compiler"
# op_host/ and op_kernel/ are copied side by side into CANN's project template, so the
# op_host sources' "../op_kernel/..." include of the shared tiling struct still resolves.
"$PYTHON" setup.py -o "$HERE/op_host" -k "$HERE/op_kernel" \
  --vendor_name "$VENDOR" --soc_version "$SOCS" \
  --ascend_cann_package_path "$CANN" --install_path "$INSTALL_DIR"

echo
echo "GroupNormGradMs is installed (SoCs: $SOCS). Before running MindSpore, export:"
echo "  export ASCEND_CUSTOM_OPP_PATH=$INSTALL_DIR/vendors/$VENDOR:\${ASCEND_CUSTOM_OPP_PATH:-}"
