"""The operators as every backend shares them: their descriptions (``descriptions``), the
argument checks (``checks``), the shape glue of the aclnn-style contracts (``layout``) and
the choice of backend per call (``routing``)."""
