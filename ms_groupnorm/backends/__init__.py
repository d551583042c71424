"""The backends, each implementing the whole operator family once from the operators'
descriptions (``ms_groupnorm.ops.descriptions``, handed in by ``ms_groupnorm.ops.routing``):
CPU aot (``cpu_aot``, with ``cpu_kernels``), the CPU PyNative fast path (``cpu_pyboost``),
Ascend in both modes (``ascend``, with ``ascend_pyboost`` for PYNATIVE_MODE) and the AscendC
kernels' CPU twins (``twin_build``; ``backend="ascendc_twin"`` runs them through ``cpu_aot``)."""
