/*
 * db.c - the records of the tuning database: profiles, calibrations,
 * samples and plans, and the transactions that batch their writes. Every
 * statement is prepared with its keys and texts bound as parameters, never
 * pasted into the SQL. Opening and checking the file is db_open.c's job.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_internal.h"

/* Prepares sql and binds texts[i] to ?(i+1), then *seconds (if given) to
 * the next parameter. The texts must outlive the statement. */
static db_status prepare_bound(db *d, const char *sql, const char *const *texts, int ntexts,
                               const double *seconds, sqlite3_stmt **stmt)
{
    int rc = sqlite3_prepare_v2(d->conn, sql, -1, stmt, NULL);
    for (int i = 0; i < ntexts && rc == SQLITE_OK; i++)
        rc = sqlite3_bind_text(*stmt, i + 1, texts[i], -1, SQLITE_STATIC);
    if (seconds && rc == SQLITE_OK)
        rc = sqlite3_bind_double(*stmt, ntexts + 1, *seconds);
    if (rc == SQLITE_OK)
        return DB_OK;
    db_status s = db_fail(d, rc);
    sqlite3_finalize(*stmt); /* accepts NULL */
    *stmt = NULL;
    return s;
}

static db_status write_row(db *d, const char *sql, const char *const *texts, int ntexts,
                           const double *seconds)
{
    if (!d->writable)
        return db_fail_with(d, DB_READONLY, "was opened read-only");
    sqlite3_stmt *stmt;
    db_status s = prepare_bound(d, sql, texts, ntexts, seconds, &stmt);
    if (s != DB_OK)
        return s;
    int rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE)
        s = db_fail(d, rc);
    sqlite3_finalize(stmt);
    return s;
}

/* A malloc'd copy of a text column. */
static db_status copy_text(db *d, sqlite3_stmt *stmt, int column, char **out)
{
    const unsigned char *text = sqlite3_column_text(stmt, column);
    size_t n = (size_t)sqlite3_column_bytes(stmt, column);
    char *copy = malloc(n + 1);
    if (!copy)
        return db_fail_with(d, DB_IO, "could not be read (out of memory)");
    if (n)
        memcpy(copy, text, n);
    copy[n] = '\0';
    *out = copy;
    return DB_OK;
}

/* Runs a query for one row and copies its first column; the second, if
 * seconds is given, is a double. */
static db_status read_row(db *d, const char *sql, const char *const *texts, int ntexts,
                          char **text_out, double *seconds)
{
    if (!d->has_schema)
        return DB_NOT_FOUND; /* an empty file, opened read-only */
    sqlite3_stmt *stmt;
    db_status s = prepare_bound(d, sql, texts, ntexts, NULL, &stmt);
    if (s != DB_OK)
        return s;
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        s = copy_text(d, stmt, 0, text_out);
        if (seconds)
            *seconds = sqlite3_column_double(stmt, 1);
    } else {
        s = rc == SQLITE_DONE ? DB_NOT_FOUND : db_fail(d, rc);
    }
    sqlite3_finalize(stmt);
    return s;
}

static bool valid_seconds(double seconds)
{
    return isfinite(seconds) && seconds >= 0;
}

static db_status invalid(db *d, const char *what)
{
    return db_fail_with(d, DB_INVALID, what);
}

/* The text key of a fingerprint: 16 hex digits, as the profile keys of the
 * layers above spell it, and readable in the sqlite3 shell. */
static void fingerprint_text(uint64_t fingerprint, char out[17])
{
    snprintf(out, 17, "%016" PRIx64, fingerprint);
}

db_status db_put_profile(db *d, uint64_t fingerprint, const char *description)
{
    if (!d)
        return DB_INVALID;
    if (!description)
        return invalid(d, "was given no profile description");
    char key[17];
    fingerprint_text(fingerprint, key);
    const char *texts[] = {key, description};
    return write_row(d,
                     "INSERT INTO profiles (fingerprint, description) VALUES (?1, ?2) "
                     "ON CONFLICT (fingerprint) DO UPDATE SET description = excluded.description",
                     texts, 2, NULL);
}

db_status db_get_profile(db *d, uint64_t fingerprint, char **description)
{
    if (!d)
        return DB_INVALID;
    if (!description)
        return invalid(d, "was given nowhere to put the description");
    char key[17];
    fingerprint_text(fingerprint, key);
    const char *texts[] = {key};
    return read_row(d, "SELECT description FROM profiles WHERE fingerprint = ?1", texts, 1,
                    description, NULL);
}

db_status db_put_calibration(db *d, const char *profile_key, const char *model_text)
{
    if (!d)
        return DB_INVALID;
    if (!profile_key || !model_text)
        return invalid(d, "was given no profile key or model");
    const char *texts[] = {profile_key, model_text};
    return write_row(d,
                     "INSERT INTO calibrations (profile_key, model_text) VALUES (?1, ?2) "
                     "ON CONFLICT (profile_key) DO UPDATE SET model_text = excluded.model_text",
                     texts, 2, NULL);
}

db_status db_get_calibration(db *d, const char *profile_key, char **model_text)
{
    if (!d)
        return DB_INVALID;
    if (!profile_key || !model_text)
        return invalid(d, "was given no profile key or nowhere to put the model");
    const char *texts[] = {profile_key};
    return read_row(d, "SELECT model_text FROM calibrations WHERE profile_key = ?1", texts, 1,
                    model_text, NULL);
}

db_status db_add_sample(db *d, const char *profile_key, const char *features, double seconds)
{
    if (!d)
        return DB_INVALID;
    if (!profile_key || !features || !valid_seconds(seconds))
        return invalid(d, "was given a sample without key or features, or with bad seconds");
    const char *texts[] = {profile_key, features};
    return write_row(d, "INSERT INTO samples (profile_key, features, seconds) VALUES (?1, ?2, ?3)",
                     texts, 2, &seconds);
}

db_status db_put_plan(db *d, const char *profile_key, const char *shape_key,
                      const char *plan_text, double seconds)
{
    if (!d)
        return DB_INVALID;
    if (!profile_key || !shape_key || !plan_text || !valid_seconds(seconds))
        return invalid(d, "was given a plan without keys or text, or with bad seconds");
    const char *texts[] = {profile_key, shape_key, plan_text};
    /* One statement, so racing tuners cannot both read the old time and
     * then overwrite each other: the row is replaced only by a faster plan. */
    return write_row(d,
                     "INSERT INTO plans (profile_key, shape_key, plan_text, seconds) "
                     "VALUES (?1, ?2, ?3, ?4) "
                     "ON CONFLICT (profile_key, shape_key) DO UPDATE SET "
                     "plan_text = excluded.plan_text, seconds = excluded.seconds "
                     "WHERE excluded.seconds < plans.seconds",
                     texts, 3, &seconds);
}

db_status db_get_plan(db *d, const char *profile_key, const char *shape_key, char **plan_text,
                      double *seconds)
{
    if (!d)
        return DB_INVALID;
    if (!profile_key || !shape_key || !plan_text)
        return invalid(d, "was given no keys or nowhere to put the plan");
    const char *texts[] = {profile_key, shape_key};
    double stored = 0;
    db_status s = read_row(d,
                           "SELECT plan_text, seconds FROM plans "
                           "WHERE profile_key = ?1 AND shape_key = ?2",
                           texts, 2, plan_text, &stored);
    if (s == DB_OK && seconds)
        *seconds = stored;
    return s;
}

/* The rows of a listing go to one of three callback shapes. */
typedef enum { ROWS_CALIBRATIONS, ROWS_SAMPLES, ROWS_PLANS } row_kind;

typedef struct listing {
    row_kind kind;
    int (*calibration)(void *arg, const char *profile_key, const char *model_text);
    int (*sample)(void *arg, const char *features, double seconds);
    int (*plan)(void *arg, const char *shape_key, const char *plan_text, double seconds);
    void *arg;
} listing;

static const char *column_text(sqlite3_stmt *stmt, int column)
{
    const unsigned char *text = sqlite3_column_text(stmt, column);
    return text ? (const char *)text : "";
}

static db_status list_rows(db *d, const char *sql, const char *profile_key, const listing *l)
{
    if (!d->has_schema)
        return DB_OK; /* an empty file, opened read-only */
    const char *texts[] = {profile_key};
    sqlite3_stmt *stmt;
    db_status s = prepare_bound(d, sql, texts, profile_key ? 1 : 0, NULL, &stmt);
    if (s != DB_OK)
        return s;
    int rc = SQLITE_DONE, stop = 0;
    while (!stop && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        const char *first = column_text(stmt, 0), *second = column_text(stmt, 1);
        if (l->kind == ROWS_CALIBRATIONS)
            stop = l->calibration(l->arg, first, second);
        else if (l->kind == ROWS_SAMPLES)
            stop = l->sample(l->arg, first, sqlite3_column_double(stmt, 1));
        else
            stop = l->plan(l->arg, first, second, sqlite3_column_double(stmt, 2));
    }
    if (!stop && rc != SQLITE_DONE)
        s = db_fail(d, rc);
    sqlite3_finalize(stmt);
    return s;
}

db_status db_for_each_calibration(db *d, int (*fn)(void *arg, const char *profile_key,
                                                   const char *model_text),
                                  void *arg)
{
    if (!d)
        return DB_INVALID;
    if (!fn)
        return invalid(d, "was given no callback");
    listing l = {.kind = ROWS_CALIBRATIONS, .calibration = fn, .arg = arg};
    return list_rows(d, "SELECT profile_key, model_text FROM calibrations ORDER BY profile_key",
                     NULL, &l);
}

db_status db_for_each_sample(db *d, const char *profile_key,
                             int (*fn)(void *arg, const char *features, double seconds),
                             void *arg)
{
    if (!d)
        return DB_INVALID;
    if (!profile_key || !fn)
        return invalid(d, "was given no profile key or callback");
    listing l = {.kind = ROWS_SAMPLES, .sample = fn, .arg = arg};
    return list_rows(d, "SELECT features, seconds FROM samples WHERE profile_key = ?1 ORDER BY id",
                     profile_key, &l);
}

db_status db_for_each_plan(db *d, const char *profile_key,
                           int (*fn)(void *arg, const char *shape_key, const char *plan_text,
                                     double seconds),
                           void *arg)
{
    if (!d)
        return DB_INVALID;
    if (!profile_key || !fn)
        return invalid(d, "was given no profile key or callback");
    listing l = {.kind = ROWS_PLANS, .plan = fn, .arg = arg};
    return list_rows(d,
                     "SELECT shape_key, plan_text, seconds FROM plans WHERE profile_key = ?1 "
                     "ORDER BY shape_key",
                     profile_key, &l);
}

static db_status exec(db *d, const char *sql)
{
    int rc = sqlite3_exec(d->conn, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? DB_OK : db_fail(d, rc);
}

/* IMMEDIATE takes the write lock at BEGIN, where the busy handler waits
 * for another writer; a deferred transaction would take it at its first
 * write and could fail there with SQLITE_BUSY without waiting
 * (sqlite.org/lang_transaction.html). */
db_status db_begin(db *d)
{
    if (!d)
        return DB_INVALID;
    if (!d->writable)
        return db_fail_with(d, DB_READONLY, "was opened read-only");
    return exec(d, "BEGIN IMMEDIATE");
}

db_status db_commit(db *d)
{
    if (!d)
        return DB_INVALID;
    db_status s = exec(d, "COMMIT");
    /* A failed COMMIT can leave the transaction open; drop it, so that the
     * handle is usable and nothing of it is half-written. */
    if (s != DB_OK && !sqlite3_get_autocommit(d->conn))
        sqlite3_exec(d->conn, "ROLLBACK", NULL, NULL, NULL);
    return s;
}

db_status db_rollback(db *d)
{
    if (!d)
        return DB_INVALID;
    if (sqlite3_get_autocommit(d->conn))
        return DB_OK; /* no transaction open */
    return exec(d, "ROLLBACK");
}
