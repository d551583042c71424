// Stand-in for securec.h, the bounds-checking C library (Huawei's "securec"/libboundscheck) that
// metadef's headers include for memset_s/memcpy_s. CANN ships it with the toolkit; the open-source
// metadef checkout does not contain it. Declarations only, with the library's published signatures,
// limited to the functions metadef's inc/ headers call.
#ifndef MS_GROUPNORM_REALHEADER_SECUREC_H
#define MS_GROUPNORM_REALHEADER_SECUREC_H
#include <cstdarg>
#include <cstddef>
typedef int errno_t;
#ifndef EOK
#define EOK 0
#endif
extern "C" {
errno_t memset_s(void *dest, size_t destMax, int c, size_t count);
errno_t memcpy_s(void *dest, size_t destMax, const void *src, size_t count);
errno_t strcpy_s(char *strDest, size_t destMax, const char *strSrc);
int vsnprintf_s(char *strDest, size_t destMax, size_t count, const char *format, va_list argList);
}
#endif  // MS_GROUPNORM_REALHEADER_SECUREC_H
