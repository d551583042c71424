// Stand-in: ops-nn's common/inc/error_util.h includes graph/operator.h and uses nothing from it; the
// metadef tree the peer builds against has no such file. Intentionally empty.
#ifndef GNMS_PEER_GRAPH_OPERATOR_H
#define GNMS_PEER_GRAPH_OPERATOR_H
#endif
