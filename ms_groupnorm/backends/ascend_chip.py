"""Which Ascend chip this is, and whether our AscendC operators may run on it: checked before
the first launch (the Ascend PyNative module's build, the GRAPH_MODE ops' creation), so that a
user on another chip reads one error naming the chip instead of a CANN launch error.

Three lists are compared:

* the chip MindSpore reports: ``MSContext.get_instance().get_ascend_soc_version()`` (as
  ``mindspore/train/model.py`` reads it), a CANN SoC name such as "ascend910b"; "" off Ascend;
* the chips the installed operator package was built for: CANN's installer writes one
  ``op_impl/ai_core/tbe/config/<soc>/`` directory per SoC into the vendor directory (MindSpore
  reads the op info from there too: ``ops/operations/_custom_ops_utils.py``);
* the chips we support (``SUPPORTED``) or build without having run (``UNVERIFIED``).

Why the first-generation 910 ("ascend910", Atlas training products) is refused by name: on it
``DataCopyPad`` and ``Brcb`` compile to nothing in device builds (asc-devkit's 910
implementation only logs "unsupported"), so the kernels would silently copy nothing; it has no
``Gather`` (Gather.md); hardware ``SyncAll`` is ``ASSERT(0)``; there is no bfloat16; only event ids 0-3 exist. CANN's own
GroupNormGrad has no ascend910 config either (aclnn builds it from BatchNorm's backward there).
"""
import functools
import os
from pathlib import Path

ALLOW_UNVERIFIED_ENV = "MS_GROUPNORM_ALLOW_UNVERIFIED_CHIP"
CONFIG_DIR = Path("op_impl") / "ai_core" / "tbe" / "config"

SUPPORTED = {
    "ascend910b": "Atlas A2 training / inference series (Ascend 910B)",
    "ascend910_93": "Atlas A3 training / inference series",
}
UNVERIFIED = {
    "ascend950": ("Ascend 950PR/950DT: the package is built for it where CANN knows it, and the kernels are "
                  "checked in the CPU twin at its sizes (248 KiB UB, 56 and 64 vector cores), but they were "
                  "never compiled with bisheng for it nor run on one"),
}
REFUSED = {
    "ascend910": ("the first-generation Ascend 910 (Atlas training products) lacks what the kernels need: "
                  "DataCopyPad and Brcb compile to nothing in its device builds (the kernels would silently "
                  "copy nothing), it has no Gather, hardware SyncAll is ASSERT(0), there is no bfloat16 and only "
                  "event ids 0-3 exist"),
    "ascend310p": "Atlas inference products (Ascend 310P) are not a target of these training kernels",
    "ascend310b": "Atlas 200I/500 A2 (Ascend 310B) is not a target of these training kernels",
}
WHAT_TO_DO = ("use MindSpore's own GroupNorm (mindspore.nn.GroupNorm / mindspore.mint.nn.functional.group_norm), "
              "or set MS_GROUPNORM_ASCEND_FALLBACK=mindspore to have ms_groupnorm's layers and functions run it "
              "here, or run on an Atlas A2/A3 machine")


class UnsupportedChipError(RuntimeError):
    """The Ascend chip MindSpore reports is not one our AscendC operators run on (or the
    installed operator package was not built for it). ``chip``: the SoC name; ``supported``:
    the SoC names that would work here."""

    def __init__(self, chip, supported, detail):
        self.chip = chip
        self.supported = tuple(supported)
        super().__init__(f"ms_groupnorm: the AscendC operators cannot run on this chip {chip!r}: {detail}. "
                         f"Supported: {', '.join(self.supported) or 'none here'}. What to do: {WHAT_TO_DO}.")


def reported_chip():
    """The SoC name MindSpore reports ("" when it reports none, e.g. off Ascend)."""
    from mindspore._c_expression import MSContext
    return MSContext.get_instance().get_ascend_soc_version() or ""


def on_ascend_device():
    from mindspore import context
    return context.get_context("device_target") == "Ascend"


def package_chips(vendor_dir):
    """The SoCs the operator package in ``vendor_dir`` was built for (its config directories),
    or None when it has no config directory at all."""
    config = Path(vendor_dir) / CONFIG_DIR
    if not config.is_dir():
        return None
    return sorted(entry.name for entry in config.iterdir() if entry.is_dir())


def allowed_unverified():
    return {name.strip() for name in os.environ.get(ALLOW_UNVERIFIED_ENV, "").split(",") if name.strip()}


def check_chip(vendor_dir=None):
    """Raises UnsupportedChipError when the reported chip is not one we run on, or not one the
    package in ``vendor_dir`` (None: not located yet) was built for. No chip reported and no
    Ascend device target (the simulated routes on CPU): nothing to check. Returns the chip."""
    return _check_chip(reported_chip(), on_ascend_device(), None if vendor_dir is None else str(vendor_dir),
                       frozenset(allowed_unverified()))


@functools.lru_cache(maxsize=16)
def _check_chip(chip, on_device, vendor_dir, allowed):
    if not chip:
        if on_device:
            raise UnsupportedChipError("", SUPPORTED, "MindSpore reports no Ascend SoC version (a MindSpore older "
                                       "than the chip? MindSpore 2.7-2.8 do not know ascend950)")
        return chip
    built = package_chips(vendor_dir) if vendor_dir is not None else None
    # what would run here: our chips, the unverified ones only where the user opted in, and
    # (where the package is located) only those it was built for
    runnable = [soc for soc in (*SUPPORTED, *(s for s in UNVERIFIED if s in allowed)) if built is None or soc in built]
    if chip in REFUSED:
        raise UnsupportedChipError(chip, runnable, REFUSED[chip])
    if chip in UNVERIFIED and chip not in allowed:
        raise UnsupportedChipError(chip, runnable,
                                   f"{UNVERIFIED[chip]}; set {ALLOW_UNVERIFIED_ENV}={chip} to run them there anyway")
    if chip not in SUPPORTED and chip not in UNVERIFIED:
        raise UnsupportedChipError(chip, runnable, "this SoC is not one the operators are written for")
    if built is not None and chip not in built:
        raise UnsupportedChipError(chip, runnable, (
            f"the installed operator package ({vendor_dir}) was built for {', '.join(built) or 'no SoC'} only "
            f"(its {CONFIG_DIR}/<soc> directories); rebuild it on this machine with `bash kernels/ascendc/build.sh`"))
    return chip
