"""The backends, each implementing the whole operator family once from the operators'
descriptions (``ms_groupnorm.ops.descriptions``, handed in by ``ms_groupnorm.ops.routing``):
CPU aot (``cpu_aot``, with ``cpu_kernels``), the CPU PyNative fast path (``cpu_pyboost``),
Ascend GRAPH_MODE (``ascend_graph``), Ascend PYNATIVE_MODE (``ascend_pynative``, with
``ascend_pyboost``) and the AscendC kernels' CPU twins (``twin``)."""
