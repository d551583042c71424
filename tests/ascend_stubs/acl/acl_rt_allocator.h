// Stand-in for CANN <cann>/include/acl/acl_rt_allocator.h (declarations only, see ../README.md).
#ifndef MS_GROUPNORM_STUB_ACL_RT_ALLOCATOR_H_
#define MS_GROUPNORM_STUB_ACL_RT_ALLOCATOR_H_
#include "acl/acl_rt.h"
typedef void *aclrtAllocatorDesc;
typedef void *aclrtAllocator;
typedef void *aclrtAllocatorBlock;
typedef void *(*aclrtAllocatorAllocFunc)(aclrtAllocator allocator, size_t size);
typedef void (*aclrtAllocatorFreeFunc)(aclrtAllocator allocator, aclrtAllocatorBlock block);
typedef void *(*aclrtAllocatorAllocAdviseFunc)(aclrtAllocator allocator, size_t size, void *addr);
typedef void *(*aclrtAllocatorGetAddrFromBlockFunc)(aclrtAllocatorBlock block);
#endif
