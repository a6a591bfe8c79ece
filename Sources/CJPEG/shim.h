#ifndef COUCHLITE_CJPEG_SHIM_H
#define COUCHLITE_CJPEG_SHIM_H
#include <stdio.h>
#include <jpeglib.h>
#endif
