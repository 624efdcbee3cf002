#ifndef DBEACON_CSQLITE_SHIM_H
#define DBEACON_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif
