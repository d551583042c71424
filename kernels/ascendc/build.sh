#!/usr/bin/env bash
# Builds and installs the AscendC operator package (GroupNormGradMs, GroupNormSiluMs,
# GroupNormSiluGradMs) on an Ascend machine, with the custom_compiler shipped in the
# MindSpore Ascend wheel, and prints the ASCEND_CUSTOM_OPP_PATH to export. On a machine
# without CANN it stops with a message.
#
# custom_compiler builds every operator of op_host/ and op_kernel/ (GroupNormGradMs, the
# forward GroupNormSiluMs and the fused GroupNorm+SiLU backward GroupNormSiluGradMs) into
# one package, for the SoCs the operator definitions list with AddConfig, read from the
# sources (every OP_ADD file must list the same SoCs, in order). Each operator needs its
# kernel source op_kernel/<snake_case name>.cpp (CANN's build looks for exactly that file:
# asc-devkit cmake/asc/fwk_modules/util/ascendc_impl_build.py, "<op_file>.cpp"); a missing
# one is reported here, before the long build.
#
# Which SoCs: those of the OpDefs that the installed CANN supports (it has
# opp/built-in/op_impl/ai_core/tbe/config/<soc>, as CANN's own operators do for each SoC it
# knows) and that the wheel's custom_compiler accepts; MS_GROUPNORM_SOCS narrows that to the
# machine's chip. ascend950 (Ascend 950, arch 3510) is built only where both know it: CANN 8.x
# and MindSpore 2.7-2.8 predate it, and a build there must not break because of it. When a
# SoC is left out, the build reads a copy of op_host/ without its AddConfig line, so that the
# package declares only SoCs it has kernels for. The script says which SoCs it builds, and why
# it leaves any out.
#
# Environment (all optional):
#   ASCEND_HOME_PATH  CANN install (default: /usr/local/Ascend/ascend-toolkit/latest)
#   MS_GROUPNORM_SOCS SoCs to build for, ';'-separated (default: all of the above), e.g. the
#                     machine's own: the name `python -c "from mindspore._c_expression import
#                     MSContext; print(MSContext.get_instance().get_ascend_soc_version())"` prints
#   VENDOR_NAME       vendor directory of the package (default: ms_groupnorm)
#   INSTALL_DIR       where the package is installed (default: kernels/ascendc/build/opp)
#   BUILD_DIR         scratch directory of the build (default: kernels/ascendc/build)
#   PYTHON            python with the MindSpore Ascend wheel (default: python3)
#
# Minimum versions: a MindSpore Ascend wheel whose custom_compiler accepts the SoCs the
# OpDefs list (checked below, before building) and CANN
# 8.2 (the standard C++ tiling struct, see op_host/group_norm_grad_ms.cpp).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CANN="${ASCEND_HOME_PATH:-/usr/local/Ascend/ascend-toolkit/latest}"
VENDOR="${VENDOR_NAME:-ms_groupnorm}"
INSTALL_DIR="${INSTALL_DIR:-$HERE/build/opp}"
WORK="${BUILD_DIR:-$HERE/build}"
PYTHON="${PYTHON:-python3}"

# AddConfig("<soc>") lines of the OpDef, joined with ';' (custom_compiler's separator).
SOCS=""
OPS=""
for OPDEF in $(grep -l 'OP_ADD(' "$HERE"/op_host/*.cpp); do
  OP_SOCS="$(grep -o 'AddConfig("[a-z0-9_]*"' "$OPDEF" | sed 's/AddConfig("\(.*\)"/\1/' | paste -sd ';' -)"
  if [ -z "$OP_SOCS" ]; then
    echo "build.sh: no AddConfig(\"<soc>\") found in op_host/$(basename "$OPDEF")." >&2
    exit 2
  fi
  if [ -n "$SOCS" ] && [ "$OP_SOCS" != "$SOCS" ]; then
    echo "build.sh: op_host/$(basename "$OPDEF") lists the SoCs '$OP_SOCS', another operator '$SOCS';" >&2
    echo "the package is built for one SoC list: make the AddConfig lines agree." >&2
    exit 2
  fi
  SOCS="$OP_SOCS"
  for OP in $(grep -o 'OP_ADD([A-Za-z0-9_]*)' "$OPDEF" | sed 's/OP_ADD(\(.*\))/\1/'); do
    KERNEL="$(echo "$OP" | sed -E 's/([a-z0-9])([A-Z])/\1_\2/g' | tr 'A-Z' 'a-z').cpp"
    if [ ! -f "$HERE/op_kernel/$KERNEL" ]; then
      echo "build.sh: operator $OP (op_host/$(basename "$OPDEF")) has no kernel source op_kernel/$KERNEL;" >&2
      echo "CANN's build compiles op_kernel/<snake_case name>.cpp for every operator and would fail." >&2
      exit 2
    fi
    OPS="$OPS $OP"
  done
done
if [ -z "$SOCS" ]; then
  echo "build.sh: no operator definition (OP_ADD) found in op_host/." >&2
  exit 2
fi

if [ ! -d "$CANN" ] || { [ ! -f "$CANN/bin/setenv.bash" ] && [ ! -f "$CANN/set_env.sh" ]; }; then
  echo "build.sh: CANN was not found at '$CANN' (no bin/setenv.bash or set_env.sh)." >&2
  echo "This script builds the AscendC operator and needs an Ascend machine with CANN installed;" >&2
  echo "set ASCEND_HOME_PATH to the CANN toolkit. On CPU-only machines use the CPU twin instead" >&2
  echo "(MS_GROUPNORM_BACKEND=ascendc_twin, see kernels/ascendc/README.md)." >&2
  exit 2
fi

# CANN's environment, as check_on_ascend.sh sets it: sourced here when the caller has not
# (no $ASCEND_OPP_PATH), so that running build.sh alone works too.
if [ -z "${ASCEND_OPP_PATH:-}" ]; then
  if [ -f "$CANN/set_env.sh" ]; then ENV_SCRIPT="$CANN/set_env.sh"; else ENV_SCRIPT="$CANN/bin/setenv.bash"; fi
  echo "build.sh: \$ASCEND_OPP_PATH is unset: sourcing $ENV_SCRIPT"
  # set_env.sh appends to variables that may be unset: allow that while sourcing it.
  set +u
  # shellcheck disable=SC1090
  source "$ENV_SCRIPT"
  set -u
fi

MS_DIR="$("$PYTHON" -c 'import mindspore, os; print(os.path.dirname(mindspore.__file__))')"
COMPILER="$MS_DIR/lib/plugin/ascend/custom_compiler"
if [ ! -f "$COMPILER/setup.py" ]; then
  echo "build.sh: $COMPILER/setup.py not found: install the MindSpore Ascend wheel." >&2
  exit 2
fi

# The SoC names this wheel's custom_compiler accepts (its check_args set), so that an old
# wheel fails here with the reason instead of deep inside the build.
ACCEPTED="$("$PYTHON" - "$COMPILER/setup.py" <<'PY'
import re, sys
match = re.search(r"support_soc_version\s*=\s*\{([^}]*)\}", open(sys.argv[1], encoding="utf-8").read())
print(";".join(re.findall(r"[\"']([^\"']+)[\"']", match.group(1))) if match else "")
PY
)"
# The SoCs the installed CANN supports: its built-in operators' config directories.
CANN_SOCS=""
for CONFIG in "$CANN/opp/built-in/op_impl/ai_core/tbe/config" "${ASCEND_OPP_PATH:-/nonexistent}/built-in/op_impl/ai_core/tbe/config"; do
  if [ -d "$CONFIG" ]; then
    CANN_SOCS="$(find "$CONFIG" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort | paste -sd ';' -)"
    break
  fi
done
# SoCs that may be left out when this CANN or wheel does not know them; the others are required.
NEWER_SOCS=";ascend950;"
BUILD_SOCS=""
SKIPPED=""
for SOC in ${SOCS//;/ }; do
  WHY=""
  if [ -n "${MS_GROUPNORM_SOCS:-}" ] && [[ ";$MS_GROUPNORM_SOCS;" != *";$SOC;"* ]]; then
    WHY="not in \$MS_GROUPNORM_SOCS"
  elif [ -n "$CANN_SOCS" ] && [[ ";$CANN_SOCS;" != *";$SOC;"* ]]; then
    WHY="this CANN does not support it (no opp/built-in/op_impl/ai_core/tbe/config/$SOC)"
  elif [ -z "$CANN_SOCS" ] && [[ "$NEWER_SOCS" == *";$SOC;"* ]]; then
    WHY="cannot tell whether this CANN supports it (no opp/built-in/op_impl/ai_core/tbe/config)"
  elif [ -n "$ACCEPTED" ] && [[ ";$ACCEPTED;" != *";$SOC;"* ]]; then
    if [[ "$NEWER_SOCS" != *";$SOC;"* ]]; then
      echo "build.sh: the MindSpore wheel's custom_compiler ($COMPILER/setup.py) does not accept the SoC" >&2
      echo "'$SOC' (it accepts: ${ACCEPTED//;/, }). Install MindSpore >= 2.7.1 (Ascend wheel: 2.7.1 to 2.10 accept every SoC our OpDefs require)." >&2
      exit 2
    fi
    WHY="this MindSpore wheel's custom_compiler does not accept it (MindSpore >= 2.9 does)"
  fi
  if [ -n "$WHY" ]; then
    SKIPPED="$SKIPPED $SOC"
    echo "build.sh: not building for $SOC: $WHY"
  else
    BUILD_SOCS="${BUILD_SOCS:+$BUILD_SOCS;}$SOC"
  fi
done
if [ -z "$BUILD_SOCS" ]; then
  echo "build.sh: no SoC left to build for (the OpDefs list: ${SOCS//;/, }; this CANN supports: ${CANN_SOCS:-unknown};" >&2
  echo "\$MS_GROUPNORM_SOCS: ${MS_GROUPNORM_SOCS:-unset})." >&2
  exit 2
fi
echo "build.sh: building for SoCs: ${BUILD_SOCS//;/, }"

# Absolute: the .run installer runs from its own temporary directory, where a relative
# path would resolve somewhere else.
mkdir -p "$INSTALL_DIR"
INSTALL_DIR="$(cd "$INSTALL_DIR" && pwd)"
# A vendor directory from an earlier install makes the installer ask before overwriting
# (and loop on a closed stdin): remove it first.
rm -rf "$INSTALL_DIR/vendors/$VENDOR"

rm -rf "$WORK/custom_compiler"
mkdir -p "$WORK"
cp -r "$COMPILER" "$WORK/custom_compiler"
cd "$WORK/custom_compiler"
# The wheel's setup.py copies CANN's common cmake files with
# os.path.join(project, "/cmake/util/", item): the leading slash makes that the absolute
# /cmake/util (outside the project, and unwritable for most users). Mend our copy.
if grep -q '"/cmake/util/"' setup.py; then
  sed -i 's|"/cmake/util/"|"cmake/util/"|g' setup.py
  echo "build.sh: mended custom_compiler/setup.py's copy of the cmake util files (\"/cmake/util/\" -> \"cmake/util/\")"
fi
# op_host/ and op_kernel/ are copied side by side into CANN's project template, so the
# op_host sources' "../op_kernel/..." include of the shared tiling struct still resolves.
SOURCES="$HERE"
if [ -n "$SKIPPED" ]; then
  # The package declares only the SoCs it is built for: a copy of op_host/ without the
  # AddConfig lines of the others (op_kernel/ beside it, for the relative include).
  SOURCES="$WORK/sources"
  rm -rf "$SOURCES"
  mkdir -p "$SOURCES"
  cp -r "$HERE/op_host" "$HERE/op_kernel" "$SOURCES/"
  for SOC in $SKIPPED; do
    sed -i "/AddConfig(\"$SOC\")/d" "$SOURCES"/op_host/*.cpp
  done
fi
"$PYTHON" setup.py -o "$SOURCES/op_host" -k "$SOURCES/op_kernel" \
  --vendor_name "$VENDOR" --soc_version "$BUILD_SOCS" \
  --ascend_cann_package_path "$CANN" --install_path "$INSTALL_DIR"

echo
echo "Installed:$OPS (SoCs: $BUILD_SOCS). Before running MindSpore, export:"
echo "  export ASCEND_CUSTOM_OPP_PATH=$INSTALL_DIR/vendors/$VENDOR:\${ASCEND_CUSTOM_OPP_PATH:-}"
echo "  export LD_LIBRARY_PATH=$INSTALL_DIR/vendors/$VENDOR/op_api/lib:\${LD_LIBRARY_PATH:-}"
