#ifndef COUCHLITE_CMALLOC_SHIM_H
#define COUCHLITE_CMALLOC_SHIM_H
/* glibc malloc tuning (mallopt), which the Glibc module does not export. */
#include <malloc.h>

/* Swift reads `mallinfo2()` as the zero initializer of `struct mallinfo2`, which shares the function's name. */
static inline struct mallinfo2 couchlite_heap_info(void) { return mallinfo2(); }
#endif
