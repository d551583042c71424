// Stand-in for CANN <cann>/include/graph/operator_reg.h (metadef inc/external/graph/operator_reg.h;
// declarations only, see ../README.md).
#ifndef MS_GROUPNORM_STUB_GRAPH_OPERATOR_REG_H_
#define MS_GROUPNORM_STUB_GRAPH_OPERATOR_REG_H_
#include "graph/operator.h"
#endif
