#ifndef TETHER_BENCH_SQLITE3_SHIM_H
#define TETHER_BENCH_SQLITE3_SHIM_H
#include <sqlite3.h>
#endif
