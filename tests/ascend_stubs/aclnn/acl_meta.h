// Stand-in for CANN <cann>/include/aclnn/acl_meta.h, which every CANN-generated aclnn_<op>.h
// includes (asc-devkit tools/build/opbuild/op_aclnn_generator.cpp); declarations only, see
// ../README.md.
#ifndef MS_GROUPNORM_STUB_ACLNN_ACL_META_H_
#define MS_GROUPNORM_STUB_ACLNN_ACL_META_H_
#include <cstdint>
#include "acl/acl_base.h"
typedef int32_t aclnnStatus;
typedef struct aclOpExecutor aclOpExecutor;
typedef struct aclTensor aclTensor;
typedef struct aclScalar aclScalar;
typedef struct aclIntArray aclIntArray;
typedef struct aclFloatArray aclFloatArray;
typedef struct aclBoolArray aclBoolArray;
typedef struct aclTensorList aclTensorList;
#endif
