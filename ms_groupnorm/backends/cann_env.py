"""CANN's environment as MindSpore reads it, checked before an Ascend route compiles anything.

MindSpore derives the CANN root from ``$ASCEND_OPP_PATH`` as ``ASCEND_OPP_PATH.split('opp')[0]``
(``mindspore/ops/operations/custom_ops.py``: the aot ``Custom`` compile and ``CustomOpBuilder``,
MindSpore 2.7.1 to 2.10). That cuts the path at the FIRST "opp" anywhere in it, so a CANN under
``/home/hopper/Ascend/...`` becomes ``/home/h``: the compile then gets wrong include paths and
fails far from the cause, or picks up other headers. This module says so up front.
"""
import os

SET_ENV_HINT = "`source <CANN>/set_env.sh` first (e.g. /usr/local/Ascend/ascend-toolkit/set_env.sh)"


def cann_root_as_mindspore_reads_it(opp_path):
    """What MindSpore takes as the CANN root for ``opp_path`` (its own expression)."""
    return opp_path.split("opp")[0]


def cann_root(opp_path):
    """The real CANN root: the directory that holds the ``opp`` directory."""
    return os.path.dirname(os.path.normpath(opp_path))


def check_cann_environment(needed_by):
    """Raises a RuntimeError naming ``needed_by`` when ``$ASCEND_OPP_PATH`` is unset, or when
    MindSpore would derive a different CANN root from it than the real one."""
    opp_path = os.environ.get("ASCEND_OPP_PATH")
    if not opp_path:
        raise RuntimeError(f"ms_groupnorm: {needed_by} needs CANN's environment ($ASCEND_OPP_PATH is unset): "
                           f"{SET_ENV_HINT}")
    derived = cann_root_as_mindspore_reads_it(opp_path)
    real = cann_root(opp_path)
    if os.path.normpath(derived or ".") != real:
        raise RuntimeError(
            f"ms_groupnorm: {needed_by} cannot work with $ASCEND_OPP_PATH={opp_path!r}: MindSpore takes the CANN "
            f"root to be ASCEND_OPP_PATH.split('opp')[0] = {derived!r} (the text 'opp' occurs before the opp "
            f"directory), not {real + os.sep!r}, and would compile with wrong include paths. Make CANN reachable "
            f"through a path without 'opp' before its opp directory, e.g. `ln -s {real} /usr/local/Ascend/cann` "
            f"and source /usr/local/Ascend/cann/set_env.sh (or set ASCEND_OPP_PATH=/usr/local/Ascend/cann/opp).")
