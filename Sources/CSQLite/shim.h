#ifndef DBEACON_CSQLITE_SHIM_H
#define DBEACON_CSQLITE_SHIM_H
#include <sqlite3.h>

/// Keeps SQLite from checkpointing the write-ahead log when this connection closes (Swift
/// cannot call the variadic sqlite3_db_config): used when the disk is too full for it.
static inline int dbeacon_skip_checkpoint_on_close(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}
#endif
