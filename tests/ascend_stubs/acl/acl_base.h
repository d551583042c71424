// Stand-in for CANN <cann>/include/acl/acl_base.h (declarations only, see ../README.md).
#ifndef MS_GROUPNORM_STUB_ACL_BASE_H_
#define MS_GROUPNORM_STUB_ACL_BASE_H_
#include <cstddef>
#include <cstdint>

typedef int aclError;
static const int ACL_SUCCESS = 0;  // the one value that matters: CANN's success code is 0
typedef void *aclrtStream;
typedef void *aclrtEvent;
typedef void *aclrtContext;
typedef uint16_t aclFloat16;
typedef struct aclDataBuffer aclDataBuffer;
typedef struct aclTensorDesc aclTensorDesc;

typedef enum {
  ACL_DT_UNDEFINED = -1, ACL_FLOAT = 0, ACL_FLOAT16 = 1, ACL_INT8 = 2, ACL_INT32 = 3, ACL_UINT8 = 4,
  ACL_INT16 = 6, ACL_UINT16 = 7, ACL_UINT32 = 8, ACL_INT64 = 9, ACL_UINT64 = 10, ACL_DOUBLE = 11,
  ACL_BOOL = 12, ACL_STRING = 13, ACL_COMPLEX64 = 16, ACL_COMPLEX128 = 17, ACL_BF16 = 27
} aclDataType;

typedef enum {
  ACL_FORMAT_UNDEFINED = -1, ACL_FORMAT_NCHW = 0, ACL_FORMAT_NHWC = 1, ACL_FORMAT_ND = 2,
  ACL_FORMAT_NC1HWC0 = 3, ACL_FORMAT_FRACTAL_Z = 4, ACL_FORMAT_FRACTAL_NZ = 29, ACL_FORMAT_NCDHW = 30,
  ACL_FORMAT_NDHWC = 27, ACL_FORMAT_NCL = 47
} aclFormat;

typedef enum { ACL_MEMTYPE_DEVICE = 0, ACL_MEMTYPE_HOST = 1, ACL_MEMTYPE_HOST_COMPILE_INDEPENDENT = 2 } aclMemType;

#endif
