/*
 * db.h - the tuning database: a SQLite file that keeps hardware profiles,
 * fitted cost models (calibrations), the measurements they were fitted on
 * (samples), and tuned plans, so that `tessel tune` runs once per machine.
 * The layer stores opaque text; the layers above serialise their structs.
 * A database that is missing, corrupt, locked, read-only or of a newer
 * schema gives a status and a one-line message, never a crash or a print,
 * and is never repaired, rewritten or deleted: the caller falls back to the
 * analytic model. A handle is used by one thread at a time.
 */
#ifndef TESSEL_DB_H
#define TESSEL_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct db db;

typedef enum db_status {
    DB_OK = 0,
    DB_MISSING,    /* read-only open of a file that does not exist (never created on read) */
    DB_CORRUPT,    /* not a database, truncated, or malformed */
    DB_LOCKED,     /* another connection held a lock past the busy timeout */
    DB_READONLY,   /* a write to a file or folder we may not write */
    DB_VERSION,    /* schema newer than this build knows, or another program's
                      database: left untouched */
    DB_IO,         /* any other SQLite or file-system failure */
    DB_NOT_FOUND,  /* a get found no row (not an error of the database) */
    DB_INVALID     /* a bad argument: NULL key or text, negative or non-finite seconds */
} db_status;

/* The schema this build creates and reads (PRAGMA user_version). */
enum { DB_SCHEMA_VERSION = 1 };

/* A short, static description of a status ("locked by another process"). */
const char *db_status_str(db_status s);

/* The path to use: TESSEL_DB if set and non-empty, else
 * $XDG_CACHE_HOME/tessel/tessel.db (XDG_CACHE_HOME absolute), else
 * $HOME/.cache/tessel/tessel.db. Returns buf, or NULL if it does not fit or
 * there is no HOME. */
const char *db_default_path(char *buf, size_t len);

/* Opens path (NULL: db_default_path). writable: creates the missing folders
 * (0700) and the file, and the schema if the file is empty, and sets WAL
 * mode; the file must be writable. Read-only: never creates anything.
 * busy_ms: how long to wait for another process's lock. The file is
 * checked (PRAGMA quick_check) before anything is written, so a corrupt
 * file is reported here and left byte for byte as it was. On failure *out
 * is NULL and msg holds one line naming the path and the cause, e.g.
 * "tessel.db: /x/y.db is not a SQLite database (file is not a database)";
 * the caller adds what it does instead. Never prints. */
db_status db_open(const char *path, bool writable, int busy_ms, db **out, char *msg, size_t msglen);
void db_close(db *d);
const char *db_path(const db *d);
/* The last failure's message on this handle, "" if none. */
const char *db_errmsg(const db *d);

/* Profiles: one row per hardware fingerprint, with a text description
 * (e.g. the `tessel probe --json` output). Upsert. */
db_status db_put_profile(db *d, uint64_t fingerprint, const char *description);
db_status db_get_profile(db *d, uint64_t fingerprint, char **description /* malloc'd */);

/* Calibrations: a cost model keyed by a profile key (built above, like
 * "fp=0123abcd isa=avx512 threads=1"). Upsert: the newest wins. */
db_status db_put_calibration(db *d, const char *profile_key, const char *model_text);
db_status db_get_calibration(db *d, const char *profile_key, char **model_text /* malloc'd */);
/* Every calibration in key order. fn returns nonzero to stop. fn may read
 * this handle but not write it. */
db_status db_for_each_calibration(db *d, int (*fn)(void *arg, const char *profile_key,
                                                   const char *model_text),
                                  void *arg);

/* Samples, the measurements a model is fitted on: appended, never replaced;
 * listed in the order they were added. */
db_status db_add_sample(db *d, const char *profile_key, const char *features, double seconds);
db_status db_for_each_sample(db *d, const char *profile_key,
                             int (*fn)(void *arg, const char *features, double seconds),
                             void *arg);

/* Tuned plans: (profile_key, shape_key) -> plan_text and its measured
 * seconds. A put keeps the faster of the stored and the new plan, so two
 * tuners racing on one shape keep the best. */
db_status db_put_plan(db *d, const char *profile_key, const char *shape_key,
                      const char *plan_text, double seconds);
db_status db_get_plan(db *d, const char *profile_key, const char *shape_key,
                      char **plan_text /* malloc'd */, double *seconds);
/* The plans of one profile in shape-key order. */
db_status db_for_each_plan(db *d, const char *profile_key,
                           int (*fn)(void *arg, const char *shape_key, const char *plan_text,
                                     double seconds),
                           void *arg);

/* Batched writes: one IMMEDIATE transaction around many puts (tune writes
 * many rows at once; one commit is one file sync). If the commit fails, the
 * transaction is rolled back and nothing of it is written; db_rollback
 * drops it on purpose. */
db_status db_begin(db *d);
db_status db_commit(db *d);
db_status db_rollback(db *d);

#endif /* TESSEL_DB_H */
