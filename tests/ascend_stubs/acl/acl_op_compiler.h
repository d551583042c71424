// Stand-in for CANN <cann>/include/acl/acl_op_compiler.h (declarations only, see ../README.md).
#ifndef MS_GROUPNORM_STUB_ACL_OP_COMPILER_H_
#define MS_GROUPNORM_STUB_ACL_OP_COMPILER_H_
#include "acl/acl_op.h"
typedef enum { ACL_PRECISION_MODE, ACL_AICORE_NUM, ACL_OP_JIT_COMPILE, ACL_OP_DETERMINISTIC } aclCompileOpt;
typedef enum { ACL_OP_COMPILE_DEFAULT, ACL_OP_COMPILE_FUZZ } aclOpCompileFlag;
typedef enum { ACL_COMPILE_SYS, ACL_COMPILE_UNREGISTERED } aclopCompileType;
typedef enum { ACL_GRAPH_DUMP_ALL } aclGraphDumpOption;
#endif
