#ifndef COUCHLITE_CPNG_SHIM_H
#define COUCHLITE_CPNG_SHIM_H
#include <png.h>
#endif
