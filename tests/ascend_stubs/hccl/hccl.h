// Stand-in for CANN <cann>/include/hccl/hccl.h (see ../README.md). The MindSpore headers our
// module includes only need the file to exist: nothing from it is named on this path.
#ifndef MS_GROUPNORM_STUB_HCCL_H_
#define MS_GROUPNORM_STUB_HCCL_H_
#endif
