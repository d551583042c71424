"""Builds the CPU kernel library ms_groupnorm/_lib/libms_groupnorm_cpu.so.

It is a plain shared library (loaded by MindSpore's aot Custom ops and by ctypes), not
a Python extension module, so it gets a plain file name and is linked as C++.
MindSpore 2.10 uses the pre-C++11 libstdc++ ABI, hence -D_GLIBCXX_USE_CXX11_ABI=0.
"""
import glob
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

KERNEL_SOURCES = sorted(glob.glob("kernels/cpu/*.cc"))


class BuildKernelLibrary(build_ext):
    def get_ext_filename(self, fullname):
        *package, name = fullname.split(".")
        return "/".join(package + [name + ".so"])

    def get_export_symbols(self, ext):
        return []  # the kernels export C functions, not a PyInit_ entry point

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as error:  # make the one thing that matters readable
            sys.stderr.write(
                "\nms_groupnorm: building the CPU kernel library failed "
                f"({type(error).__name__}: {error}).\n"
                "It needs a C++17 compiler with OpenMP (g++ >= 9 with libgomp). "
                "The compiler output above shows the cause.\n\n")
            raise


setup(
    ext_modules=[
        Extension(
            "ms_groupnorm._lib.libms_groupnorm_cpu",
            sources=KERNEL_SOURCES,
            depends=sorted(glob.glob("kernels/cpu/*.h")),
            language="c++",
            extra_compile_args=["-std=c++17", "-O3", "-fopenmp", "-D_GLIBCXX_USE_CXX11_ABI=0",
                                "-fvisibility=hidden", "-Wall", "-Wextra"],
            extra_link_args=["-fopenmp"],
        )
    ],
    cmdclass={"build_ext": BuildKernelLibrary},
)
