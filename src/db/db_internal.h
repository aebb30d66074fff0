/*
 * db_internal.h - what the two halves of the tuning database share: the
 * handle, and the one place that turns a SQLite result code into a status
 * and a message. db_open.c opens, checks and creates the file; db.c reads
 * and writes the records.
 */
#ifndef TESSEL_DB_INTERNAL_H
#define TESSEL_DB_INTERNAL_H

#include <sqlite3.h>

#include "db/db.h"

struct db {
    sqlite3 *conn;
    char *path;
    bool writable;
    /* False for a read-only open of an empty file: it has no tables yet,
     * and reads simply find nothing. */
    bool has_schema;
    int busy_ms;
    char errmsg[512];
};

/* Maps a failed SQLite call on d (rc, with the connection's message) to a
 * status and records a one-line message naming the file and the cause. */
db_status db_fail(db *d, int rc);

/* Records a message of our own (a bad argument, a read-only handle). */
db_status db_fail_with(db *d, db_status status, const char *cause);

#endif /* TESSEL_DB_INTERNAL_H */
