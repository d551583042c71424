#!/usr/bin/env bash
# One command on an Ascend machine (910B / 910_93) with CANN and MindSpore's Ascend wheel:
# builds and installs the operators (build.sh: GroupNormGradMs, GroupNormSiluMs and the fused
# backward GroupNormSiluGradMs), points MindSpore at them (ASCEND_CUSTOM_OPP_PATH), then runs
# the tests marked `ascend` (tests/test_on_ascend.py): our backward in GRAPH (jit_level O0)
# and PYNATIVE against the float64 reference and the built-in GroupNormGrad for every tiling
# mode, dtype pair and output mask; the fused GroupNorm + SiLU forward and backward in both
# modes against the float64 reference (ms_groupnorm/reference.py), swish_scale 1 and
# 1.7, masks, the GroupNormSiLU layer, dynamic shapes; and a timing table against the built-in. Ends with one line: "VERDICT: PASS ..." or "VERDICT: FAIL ...".
#
# Minimum versions: MindSpore 2.7.1 (Ascend wheel; 2.7.1 to 2.10 are supported) and CANN 8.2; see build.sh.
#
# Exit status: 0 all passed, 1 a test failed, 2 no CANN / build failed.
# Environment: ASCEND_HOME_PATH (CANN, default /usr/local/Ascend/ascend-toolkit/latest),
# PYTHON (default python3), and build.sh's VENDOR_NAME / INSTALL_DIR.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CANN="${ASCEND_HOME_PATH:-/usr/local/Ascend/ascend-toolkit/latest}"
PYTHON="${PYTHON:-python3}"
VENDOR="${VENDOR_NAME:-ms_groupnorm}"
INSTALL_DIR="${INSTALL_DIR:-$HERE/build/opp}"
mkdir -p "$INSTALL_DIR"
export INSTALL_DIR="$(cd "$INSTALL_DIR" && pwd)"  # absolute: used after cd and by the installer

if [ -f "$CANN/set_env.sh" ]; then
  ENV_SCRIPT="$CANN/set_env.sh"
elif [ -f "$CANN/bin/setenv.bash" ]; then
  ENV_SCRIPT="$CANN/bin/setenv.bash"
else
  echo "check_on_ascend.sh: CANN was not found at '$CANN' (no set_env.sh or bin/setenv.bash)." >&2
  echo "This check needs an Ascend machine with CANN and MindSpore's Ascend wheel; set ASCEND_HOME_PATH." >&2
  echo "VERDICT: NOT RUN (no CANN)"
  exit 2
fi
# CANN's set_env.sh appends to variables that may be unset (LD_LIBRARY_PATH, PYTHONPATH,
# ...): source it with unset variables allowed, then restore -u.
set +u
# shellcheck disable=SC1090
source "$ENV_SCRIPT"
set -u

echo "== 1/2 build and install the operators (build.sh)"
if ! ASCEND_HOME_PATH="$CANN" PYTHON="$PYTHON" bash "$HERE/build.sh"; then
  echo "VERDICT: FAIL (build.sh could not build or install the operators; see its output above)"
  exit 2
fi
export ASCEND_CUSTOM_OPP_PATH="$INSTALL_DIR/vendors/$VENDOR:${ASCEND_CUSTOM_OPP_PATH:-}"
# MindSpore loads op_api/lib/libcust_opapi.so itself; CANN's installer also advises this.
export LD_LIBRARY_PATH="$INSTALL_DIR/vendors/$VENDOR/op_api/lib:${LD_LIBRARY_PATH:-}"
# Absolute: MindSpore remembers the compiled aclnn callback by this path, and the tests
# change directory (a relative ./custom_kernel_meta would stop resolving).
export MS_COMPILER_CACHE_PATH="${MS_COMPILER_CACHE_PATH:-$HERE/build/kernel_meta}"
mkdir -p "$MS_COMPILER_CACHE_PATH"
export MS_COMPILER_CACHE_PATH="$(cd "$MS_COMPILER_CACHE_PATH" && pwd)"
export MS_GROUPNORM_REQUIRE_ASCEND=1  # the ascend tests must run here, never skip

echo "== 2/2 pytest -m ascend (GRAPH jit_level O0 and PYNATIVE, GroupNorm and fused GroupNorm+SiLU vs reference and built-in; dynamic shapes; timing table)"
LOG="$(mktemp)"
cd "$REPO" && "$PYTHON" -m pytest -m ascend tests/test_on_ascend.py -q -s -rfEs -p no:cacheprovider 2>&1 | tee "$LOG"
STATUS=${PIPESTATUS[0]}
SUMMARY="$(grep -E '^[=]* ?[0-9]+ (passed|failed)|[0-9]+ (passed|failed|error)' "$LOG" | tail -1 | tr -d '=' | sed 's/^ *//')"
rm -f "$LOG"
if [ "$STATUS" -eq 0 ]; then
  echo "VERDICT: PASS (GroupNormGradMs and the fused GroupNormSiluMs + GroupNormSiluGradMs on this device match the float64 references, GroupNormGradMs the built-in GroupNormGrad: $SUMMARY)"
  exit 0
fi
echo "VERDICT: FAIL (pytest exit $STATUS: $SUMMARY)"
exit 1
