// Stand-in for CANN's closed slog header dlog_pub.h, which metadef's ge_log.h includes: the module
// id and the dlog_* calls it makes. Errors and warnings go to stderr, the rest is dropped.
#ifndef GNMS_PEER_DLOG_PUB_H
#define GNMS_PEER_DLOG_PUB_H
#include <cstdint>
#include <cstdio>
enum { GE = 45 };  // the module id ge_log.h names (any value: only passed back to dlog_*)
#define RUN_LOG_MASK 0x01000000
#define DLOG_DEBUG 0
#define DLOG_INFO 1
#define DLOG_WARN 2
#define DLOG_ERROR 3
inline int CheckLogLevel(int, int level) { return level >= DLOG_WARN ? 1 : 0; }
#define dlog_error(module, fmt, ...) std::fprintf(stderr, "[metadef ERROR] " fmt "\n", ##__VA_ARGS__)
#define dlog_warn(module, fmt, ...) std::fprintf(stderr, "[metadef WARNING] " fmt "\n", ##__VA_ARGS__)
#define dlog_info(module, fmt, ...) ((void)(module))
#define dlog_debug(module, fmt, ...) ((void)(module))
#endif
