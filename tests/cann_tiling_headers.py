"""The two generated headers an AscendC kernel is compiled with, produced by CANN's own scripts.

CANN does not ship these as files: its build writes them.

* ``kernel_tiling/kernel_tiling.h``: asc-devkit's CMake runs
  ``impl/adv_api/cmake/scripts/gen_kernel_tiling_data_def.py <asc-devkit>/include/adv_api <out>``
  (``impl/adv_api/gen_kernel_tiling.cmake``). We run that script from the checkout.
* the per-op tiling header (``GET_TILING_DATA_WITH_STRUCT``, ``InitTilingData``, ...): the op compiler
  writes it with ``gen_dynamic_shape_v2(op_type, tiling_struct)`` in
  ``tools/build/asc_op_compile_base/asc_op_compiler/get_op_tiling.py`` and force-includes it
  (``-include <file>``, ``ascendc_compile_v220.py``). We call that very function from the checkout.
  Its module imports the whole op-compiler package (a native platform library, the tiling runtime),
  none of which ``gen_dynamic_shape_v2`` uses; those imports are satisfied with empty modules, and
  the two modules it does use (``global_storage``, ``generate_tiling_code``) are the checkout's own.
  The only settings it reads are the SoC's short name (``Ascend910B``: the 910B's code path) and
  ``ascendc_tiling_no_register``, which the op compiler sets when the kernel says
  ``REGISTER_NONE_TILING`` (``kernel_info_infer.py``) and leaves False otherwise.

The tiling struct is the one the kernel names: ``REGISTER_TILING_DEFAULT(<struct>)`` or
``GET_TILING_DATA_WITH_STRUCT(<struct>, ...)`` (CANN's standard C++ tiling struct).
"""
import importlib.util
import re
import subprocess
import sys
import types
from pathlib import Path

OP_COMPILER = Path("tools/build/asc_op_compile_base/asc_op_compiler")
KERNEL_TILING_SCRIPT = Path("impl/adv_api/cmake/scripts/gen_kernel_tiling_data_def.py")
SHORT_SOC_VERSION = "Ascend910B"  # SoC family of the 910B (dav-c220), as CANN's platform info names it


def write_kernel_tiling_header(asc_devkit, out_dir):
    """Runs asc-devkit's generator of kernel_tiling/kernel_tiling.h; returns the include dir."""
    asc_devkit, out_dir = Path(asc_devkit), Path(out_dir)
    target = out_dir / "kernel_tiling" / "kernel_tiling.h"
    subprocess.run([sys.executable, str(asc_devkit / KERNEL_TILING_SCRIPT), str(asc_devkit / "include" / "adv_api"),
                    str(target)], check=True, capture_output=True, text=True)
    if not target.is_file():
        raise RuntimeError(f"{KERNEL_TILING_SCRIPT} wrote no {target}")
    return out_dir


def _load_op_compiler_module(asc_devkit, name, package):
    path = Path(asc_devkit) / OP_COMPILER / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{package}.{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class _UnusedImport(types.ModuleType):
    """An import the generator's module makes but the generator never uses: any attribute exists."""

    def __getattr__(self, attribute):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return _Unused(f"{self.__name__}.{attribute}")


class _Unused:
    def __init__(self, name):
        self._name = name

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"gen_dynamic_shape_v2 called {self._name}, which this loader does not provide")

    def __getattr__(self, attribute):
        return _Unused(f"{self._name}.{attribute}")


def op_tiling_header(asc_devkit, op_type, tiling_struct, no_register=False):
    """The per-op tiling header text, as CANN's op compiler writes it for a dynamic-shape kernel."""
    package = "asc_op_compile_base.asc_op_compiler"
    settings = {"ascendc_short_soc_version": SHORT_SOC_VERSION, "ascendc_tiling_no_register": no_register}
    saved = {k: v for k, v in sys.modules.items() if k == "asc_op_compile_base" or k.startswith("asc_op_compile_base.")}
    try:
        for name in ["asc_op_compile_base", "asc_op_compile_base.common", "asc_op_compile_base.common.platform",
                     "asc_op_compile_base.common.platform.platform_info", "asc_op_compile_base.common.context",
                     "asc_op_compile_base.common.context.op_context", "asc_op_compile_base.common.error_mgr",
                     "asc_op_compile_base.common.utils", "asc_op_compile_base.common.utils.log_utils",
                     "asc_op_compile_base.common.utils.log", package, f"{package}.op_tiling",
                     f"{package}.ascendc_common_utility"]:
            module = _UnusedImport(name)
            module.__path__ = []  # a package: submodules resolve through sys.modules only
            sys.modules[name] = module
        sys.modules["asc_op_compile_base.common.platform.platform_info"].get_soc_spec = (
            lambda key: SHORT_SOC_VERSION if key == "SHORT_SOC_VERSION" else "")
        # module-level path strings get_op_tiling builds at import (never opened by the generator)
        op_tiling = sys.modules[f"{package}.op_tiling"]
        op_tiling._ASCEND_OPP_PATH_ENV = "ASCEND_OPP_PATH"
        op_tiling._ASCEND_OPP_PATH_DEFAULT = "/nonexistent/opp"
        op_tiling.so_arch_path2 = op_tiling.op_impl_path = "op_impl"
        storage = _load_op_compiler_module(asc_devkit, "global_storage", package)
        for key, value in settings.items():
            storage.global_var_storage.set_variable(key, value)
        _load_op_compiler_module(asc_devkit, "generate_tiling_code", package)
        get_op_tiling = _load_op_compiler_module(asc_devkit, "get_op_tiling", package)
        return get_op_tiling.gen_dynamic_shape_v2(op_type, tiling_struct)
    finally:
        for name in [k for k in sys.modules if k == "asc_op_compile_base" or k.startswith("asc_op_compile_base.")]:
            del sys.modules[name]
        sys.modules.update(saved)


def tiling_struct_of(kernel_source):
    """The kernel's tiling struct: the one REGISTER_TILING_DEFAULT names, else the one
    GET_TILING_DATA_WITH_STRUCT reads (CANN's standard C++ tiling struct)."""
    text = Path(kernel_source).read_text()
    for pattern in (r"REGISTER_TILING_DEFAULT\(\s*(\w+)\s*\)", r"GET_TILING_DATA_WITH_STRUCT\(\s*(\w+)\s*,"):
        found = re.findall(pattern, text)
        if found:
            return found[0]
    raise ValueError(f"{kernel_source}: no REGISTER_TILING_DEFAULT(<struct>) or GET_TILING_DATA_WITH_STRUCT")


def op_type_of(kernel_source):
    """The op type CANN derives the kernel from: the snake_case file name in CamelCase."""
    return "".join(part.capitalize() for part in Path(kernel_source).stem.split("_"))
