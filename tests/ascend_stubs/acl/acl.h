// Stand-in for CANN <cann>/include/acl/acl.h (declarations only, see ../README.md).
#ifndef MS_GROUPNORM_STUB_ACL_H_
#define MS_GROUPNORM_STUB_ACL_H_
#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "acl/acl_op.h"
#endif
