#ifndef COUCHLITE_CQRENCODE_SHIM_H
#define COUCHLITE_CQRENCODE_SHIM_H
#include <qrencode.h>
#endif
