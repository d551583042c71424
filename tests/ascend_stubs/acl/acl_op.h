// Stand-in for CANN <cann>/include/acl/acl_op.h (declarations only, see ../README.md).
#ifndef MS_GROUPNORM_STUB_ACL_OP_H_
#define MS_GROUPNORM_STUB_ACL_OP_H_
#include "acl/acl_base.h"
typedef struct aclopAttr aclopAttr;
typedef enum { ACL_ENGINE_SYS, ACL_ENGINE_AICORE, ACL_ENGINE_VECTOR } aclopEngineType;
#endif
