#ifndef DBEACON_CSQLITE_SHIM_H
#define DBEACON_CSQLITE_SHIM_H
#include <sqlite3.h>

/// Keeps SQLite from checkpointing the write-ahead log when this connection closes (Swift
/// cannot call the variadic sqlite3_db_config): used when the disk is too full for it.
static inline int dbeacon_skip_checkpoint_on_close(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}

/// Turns off SQLite's memory statistics (SQLITE_CONFIG_MEMSTATUS): with them on, every
/// sqlite3_malloc and sqlite3_free of every connection takes one process-wide mutex, which
/// the store's threads then contend for. Takes effect only before SQLite initializes (the
/// first open); returns SQLITE_MISUSE after.
static inline int dbeacon_sqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
#endif
