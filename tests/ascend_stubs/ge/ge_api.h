// Stand-in for CANN <cann>/include/ge/ge_api.h (declarations only, see ../README.md).
#ifndef MS_GROUPNORM_STUB_GE_API_H_
#define MS_GROUPNORM_STUB_GE_API_H_
#include "graph/operator.h"
namespace ge {
class Allocator;
using AllocatorPtr = std::shared_ptr<Allocator>;
}  // namespace ge
#endif
