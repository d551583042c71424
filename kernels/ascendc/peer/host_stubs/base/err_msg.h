// Stand-in for CANN's closed error manager header base/err_msg.h, which metadef's ge_log.h includes:
// the two report macros metadef's sources use, as stderr lines.
#ifndef GNMS_PEER_BASE_ERR_MSG_H
#define GNMS_PEER_BASE_ERR_MSG_H
#include <cstdio>
#ifndef REPORT_INNER_ERR_MSG
#define REPORT_INNER_ERR_MSG(code, fmt, ...) std::fprintf(stderr, "[%s] " fmt "\n", code, ##__VA_ARGS__)
#endif
#define REPORT_PREDEFINED_ERR_MSG(code, ...) std::fprintf(stderr, "[%s] predefined error\n", code)
#endif
