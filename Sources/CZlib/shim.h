#ifndef COUCHLITE_CZLIB_SHIM_H
#define COUCHLITE_CZLIB_SHIM_H
#include <zlib.h>
#endif
