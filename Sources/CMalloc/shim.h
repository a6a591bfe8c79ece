#ifndef COUCHLITE_CMALLOC_SHIM_H
#define COUCHLITE_CMALLOC_SHIM_H
/* glibc malloc tuning (mallopt), which the Glibc module does not export. */
#include <malloc.h>
#endif
