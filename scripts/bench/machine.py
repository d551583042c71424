"""The machine a benchmark ran on, in words, for its header and its picture's title."""
import os


def cpu_model():
    """'AMD EPYC (family 23 model 1)' from /proc/cpuinfo (the model name alone can be as vague as that)."""
    fields = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if not line.strip():
                    break  # the first processor is enough
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        return "unknown CPU"
    name = fields.get("model name", "unknown CPU")
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']} model {fields['model']})"
    return name


def cpu_isa():
    """The machine's widest vector ISA that matters here, from /proc/cpuinfo."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            flags = set(next(line for line in info if line.startswith("flags")).split())
    except (OSError, StopIteration):
        return "unknown ISA"
    if {"avx512f", "avx512bw", "avx512vl"} <= flags:
        return "AVX-512" + (" with avx512_bf16" if "avx512_bf16" in flags else ", no avx512_bf16")
    if "avx2" in flags:
        return "AVX2, no AVX-512"
    return "no AVX2"


def kernel_build(lib):
    """Which row-loop build of the CPU kernel runs: 'avx512', 'avx2' or 'portable' (MsGroupNormActiveIsa)."""
    return lib.MsGroupNormActiveIsa().decode()


BUILD_NAMES = {"avx512": "AVX-512", "avx2": "AVX2", "portable": "portable"}


def describe(lib):
    """'AMD EPYC (family 23 model 1), 2 cores, AVX2, no AVX-512; kernel build: AVX2'."""
    build = kernel_build(lib)
    return (f"{cpu_model()}, {os.cpu_count()} cores, {cpu_isa()}; kernel build: "
            f"{BUILD_NAMES.get(build, build)}")


def load_text():
    """'load average 5.2 (2 cores)': how busy the machine was when the run started. Above the
    core count, other processes were competing for the cores, and absolute times suffer
    (same-run ratios much less)."""
    try:
        return f"load average {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)"
    except OSError:
        return "load average unknown"
