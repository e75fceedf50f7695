#ifndef TETHER_CSQLITE_SHIM_H
#define TETHER_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif
