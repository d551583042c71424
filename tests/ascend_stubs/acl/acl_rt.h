// Stand-in for CANN <cann>/include/acl/acl_rt.h (declarations only, see ../README.md).
#ifndef MS_GROUPNORM_STUB_ACL_RT_H_
#define MS_GROUPNORM_STUB_ACL_RT_H_
#include "acl/acl_base.h"

typedef void *aclrtDrvMemHandle;
typedef struct aclrtExceptionInfo aclrtExceptionInfo;
typedef void (*aclrtCallback)(void *userData);
typedef void (*aclrtExceptionInfoCallback)(aclrtExceptionInfo *exceptionInfo);
typedef enum { ACL_CALLBACK_NO_BLOCK, ACL_CALLBACK_BLOCK } aclrtCallbackBlockType;
typedef enum { ACL_DEVICE, ACL_HOST } aclrtRunMode;
typedef enum {
  ACL_MEMCPY_HOST_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_DEVICE_TO_DEVICE
} aclrtMemcpyKind;
typedef enum { ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_NORMAL_ONLY } aclrtMemMallocPolicy;
typedef enum { ACL_DDR_MEM, ACL_HBM_MEM, ACL_DDR_MEM_HUGE, ACL_DDR_MEM_NORMAL } aclrtMemAttr;
typedef enum { ACL_STREAM_STATUS_COMPLETE, ACL_STREAM_STATUS_NOT_READY } aclrtStreamStatus;
typedef enum { ACL_EVENT_RECORDED_STATUS_NOT_READY, ACL_EVENT_RECORDED_STATUS_COMPLETE } aclrtEventRecordedStatus;
typedef enum { ACL_RT_OVERFLOW_MODE_SATURATION, ACL_RT_OVERFLOW_MODE_INFNAN } aclrtFloatOverflowMode;
typedef enum { ACL_RT_THREAD_LEVEL, ACL_RT_PROCESS_LEVEL } aclrtLastErrLevel;
typedef enum { ACL_MEM_HANDLE_TYPE_NONE } aclrtMemHandleType;
typedef enum { ACL_OPT_DETERMINISTIC, ACL_OPT_ENABLE_DEBUG_KERNEL } aclSysParamOpt;
typedef enum { ACL_RT_DEV_RES_CUBE_CORE, ACL_RT_DEV_RES_VECTOR_CORE } aclrtDevResLimitType;
typedef struct aclrtPhysicalMemProp { int handleType; int allocationType; int memAttr; } aclrtPhysicalMemProp;
typedef struct aclrtMemUceInfo { void *addr; size_t len; } aclrtMemUceInfo;
static const uint32_t ACL_EVENT_CAPTURE_STREAM_PROGRESS = 0;  // value not CANN's
#endif
