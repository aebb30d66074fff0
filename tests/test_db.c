/*
 * test_db.c - the tuning database: every record kind round-trips, plans keep
 * the faster, the default path follows TESSEL_DB / XDG_CACHE_HOME / HOME,
 * and each bad file (missing, random bytes, truncated, locked, read-only
 * file or folder, newer schema, another program's database) gives its own
 * status and message while its bytes and records stay as they were. Two
 * processes writing at once lose nothing, and the layer never prints.
 * Everything happens in a fresh folder under /tmp, removed at the end.
 * The read-only cases run in a child that has given up root (if the suite
 * runs as root), since permission bits do not bind root; the child sends
 * back the statuses it saw and the CHECKs are made here.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "db/db.h"
#include "test.h"

enum { BUSY_MS = 150, UNPRIVILEGED_ID = 65534 /* nobody */ };

static char root[64]; /* the suite's temp folder */

static const char *in_root(char *buf, const char *name)
{
    snprintf(buf, PATH_MAX, "%s/%s", root, name);
    return buf;
}

/* The path of name in the folder of path. */
static const char *beside(char *buf, const char *path, const char *name)
{
    int folder_len = (int)(strrchr(path, '/') - path);
    snprintf(buf, PATH_MAX, "%.*s/%s", folder_len, path, name);
    return buf;
}

/* ---- files ---- */

static char *read_file(const char *path, size_t *len)
{
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    char *bytes = malloc(size > 0 ? (size_t)size : 1);
    if (bytes && size > 0 && fread(bytes, 1, (size_t)size, f) != (size_t)size) {
        free(bytes);
        bytes = NULL;
    }
    fclose(f);
    if (bytes)
        *len = (size_t)size;
    return bytes;
}

static bool write_file(const char *path, const char *bytes, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(bytes, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

static bool same_bytes(const char *path, const char *bytes, size_t len)
{
    size_t now_len;
    char *now = read_file(path, &now_len);
    bool same = now && now_len == len && memcmp(now, bytes, len) == 0;
    free(now);
    return same;
}

static bool exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* Files in folder, besides . and ..; -1 if it cannot be read. */
static int entries_in(const char *folder)
{
    DIR *dir = opendir(folder);
    if (!dir)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(dir));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(dir);
    return n;
}

static int make_writable(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type == FTW_D)
        chmod(path, (st->st_mode & 07777) | 0700);
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    remove(path);
    return 0;
}

static void remove_tree(const char *folder)
{
    nftw(folder, make_writable, 16, FTW_PHYS);
    nftw(folder, remove_entry, 16, FTW_PHYS | FTW_DEPTH);
}

/* Runs sql on path through SQLite directly, as another program would. */
static int raw_exec(const char *path, const char *sql)
{
    sqlite3 *conn;
    int rc = sqlite3_open_v2(path, &conn, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(conn, sql, NULL, NULL, NULL);
    sqlite3_close_v2(conn);
    return rc;
}

static int raw_int(const char *path, const char *sql)
{
    sqlite3 *conn;
    sqlite3_stmt *stmt = NULL;
    int value = -1;
    if (sqlite3_open_v2(path, &conn, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(conn, sql, -1, &stmt, NULL) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW)
        value = sqlite3_column_int(stmt, 0);
    sqlite3_finalize(stmt);
    sqlite3_close_v2(conn);
    return value;
}

static double seconds_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + 1e-9 * (double)(now.tv_nsec - start->tv_nsec);
}

/* ---- listings ---- */

typedef struct {
    int count;
    int stop_after; /* 0: never stop */
    char first[64], last[64];
    double seconds_sum;
} tally;

static void note(tally *t, const char *key, double seconds)
{
    if (t->count == 0)
        snprintf(t->first, sizeof t->first, "%s", key);
    snprintf(t->last, sizeof t->last, "%s", key);
    t->count++;
    t->seconds_sum += seconds;
}

static int count_calibration(void *arg, const char *profile_key, const char *model_text)
{
    (void)model_text;
    tally *t = arg;
    note(t, profile_key, 0);
    return t->stop_after && t->count >= t->stop_after;
}

static int count_sample(void *arg, const char *features, double seconds)
{
    tally *t = arg;
    note(t, features, seconds);
    return t->stop_after && t->count >= t->stop_after;
}

static int count_plan(void *arg, const char *shape_key, const char *plan_text, double seconds)
{
    (void)plan_text;
    tally *t = arg;
    note(t, shape_key, seconds);
    return t->stop_after && t->count >= t->stop_after;
}

/* Whether the stored plan of (profile, shape) has this text and time. */
static bool plan_is(db *d, const char *profile, const char *shape, const char *text,
                    double seconds)
{
    char *stored = NULL;
    double stored_seconds = -1;
    db_status s = db_get_plan(d, profile, shape, &stored, &stored_seconds);
    bool same = s == DB_OK && strcmp(stored, text) == 0 && stored_seconds == seconds;
    free(stored);
    return same;
}

static bool calibration_is(db *d, const char *key, const char *text)
{
    char *stored = NULL;
    bool same = db_get_calibration(d, key, &stored) == DB_OK && strcmp(stored, text) == 0;
    free(stored);
    return same;
}

/* ---- the default path ---- */

static char *saved_env(const char *name)
{
    const char *value = getenv(name);
    return value ? strdup(value) : NULL;
}

static void restore_env(const char *name, char *value)
{
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
    free(value);
}

static void test_default_path(void)
{
    char *tessel_db = saved_env("TESSEL_DB"), *xdg = saved_env("XDG_CACHE_HOME"),
         *home = saved_env("HOME");
    char buf[PATH_MAX];
    const char *p;

    setenv("TESSEL_DB", "/some/where.db", 1);
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    p = db_default_path(buf, sizeof buf);
    CHECK(p && strcmp(p, "/some/where.db") == 0, "TESSEL_DB wins: %s", p ? p : "NULL");

    setenv("TESSEL_DB", "", 1);
    p = db_default_path(buf, sizeof buf);
    CHECK(p && strcmp(p, "/xdg/tessel/tessel.db") == 0, "empty TESSEL_DB, XDG: %s",
          p ? p : "NULL");

    unsetenv("TESSEL_DB");
    setenv("HOME", "/home/me", 1);
    p = db_default_path(buf, sizeof buf);
    CHECK(p && strcmp(p, "/xdg/tessel/tessel.db") == 0, "XDG before HOME: %s", p ? p : "NULL");

    setenv("XDG_CACHE_HOME", "relative/cache", 1);
    p = db_default_path(buf, sizeof buf);
    CHECK(p && strcmp(p, "/home/me/.cache/tessel/tessel.db") == 0,
          "relative XDG_CACHE_HOME is ignored: %s", p ? p : "NULL");

    unsetenv("XDG_CACHE_HOME");
    p = db_default_path(buf, sizeof buf);
    CHECK(p && strcmp(p, "/home/me/.cache/tessel/tessel.db") == 0, "HOME: %s", p ? p : "NULL");

    char small[16];
    CHECK(db_default_path(small, sizeof small) == NULL, "a path that does not fit gives NULL");

    unsetenv("HOME");
    CHECK(db_default_path(buf, sizeof buf) == NULL, "no TESSEL_DB, XDG_CACHE_HOME or HOME: NULL");
    db *d = NULL;
    char msg[256];
    CHECK(db_open(NULL, false, BUSY_MS, &d, msg, sizeof msg) == DB_MISSING && !d && msg[0],
          "read-only open without any path: DB_MISSING and a message");

    /* db_open(NULL) uses the default path and creates its folders, 0700. */
    char folder[PATH_MAX], path[PATH_MAX];
    setenv("XDG_CACHE_HOME", in_root(folder, "xdg"), 1);
    in_root(path, "xdg/tessel/tessel.db");
    db_status s = db_open(NULL, true, BUSY_MS, &d, msg, sizeof msg);
    CHECK(s == DB_OK, "open the default path writable: %s %s", db_status_str(s), msg);
    CHECK(d && strcmp(db_path(d), path) == 0, "the default path is used: %s",
          d ? db_path(d) : "NULL");
    struct stat st;
    in_root(folder, "xdg/tessel");
    CHECK(stat(folder, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700,
          "the missing folder %s is created 0700", folder);
    CHECK(exists(path), "the file is created");
    db_close(d);

    restore_env("TESSEL_DB", tessel_db);
    restore_env("XDG_CACHE_HOME", xdg);
    restore_env("HOME", home);
}

/* ---- round trips ---- */

static void test_profiles_and_calibrations(db *d)
{
    const uint64_t fp = 0xfedcba9876543210ull; /* high bit set */
    char *text = NULL;
    CHECK(db_put_profile(d, fp, "{\"cpu\": \"first\"}") == DB_OK, "put profile");
    CHECK(db_put_profile(d, fp, "{\"cpu\": \"second\"}") == DB_OK, "put profile again");
    CHECK(db_put_profile(d, 1, "{\"cpu\": \"other\"}") == DB_OK, "put another profile");
    CHECK(db_get_profile(d, fp, &text) == DB_OK && strcmp(text, "{\"cpu\": \"second\"}") == 0,
          "profile upsert keeps the newest: %s", text ? text : "NULL");
    free(text);
    text = NULL;
    CHECK(db_get_profile(d, 2, &text) == DB_NOT_FOUND && !text, "unknown fingerprint");
    CHECK(raw_int(db_path(d), "SELECT count(*) FROM profiles") == 2, "two profile rows");

    CHECK(db_put_calibration(d, "fp=01 isa=avx2", "model v1") == DB_OK, "put calibration");
    CHECK(db_put_calibration(d, "fp=01 isa=avx2", "model v2") == DB_OK, "put it again");
    CHECK(db_put_calibration(d, "fp=01 isa=avx512", "model b") == DB_OK, "second key");
    CHECK(db_put_calibration(d, "fp=00 isa=generic", "model c") == DB_OK, "third key");
    CHECK(calibration_is(d, "fp=01 isa=avx2", "model v2"), "calibration upsert: the newest wins");
    CHECK(db_get_calibration(d, "fp=99", &text) == DB_NOT_FOUND, "unknown profile key");

    tally t = {0};
    CHECK(db_for_each_calibration(d, count_calibration, &t) == DB_OK, "list calibrations");
    CHECK(t.count == 3 && strcmp(t.first, "fp=00 isa=generic") == 0 &&
              strcmp(t.last, "fp=01 isa=avx512") == 0,
          "3 calibrations in key order: %d, %s .. %s", t.count, t.first, t.last);
    t = (tally){.stop_after = 2};
    CHECK(db_for_each_calibration(d, count_calibration, &t) == DB_OK && t.count == 2,
          "a nonzero callback return stops the listing: %d", t.count);

    /* Text is bound, never pasted into SQL: quotes and SQL survive. */
    const char *nasty = "it's \"quoted\"; DROP TABLE plans; --\nline two \xc3\xa9";
    CHECK(db_put_calibration(d, nasty, nasty) == DB_OK && calibration_is(d, nasty, nasty),
          "quotes, SQL, newlines and UTF-8 round-trip");
}

static void test_samples_and_plans(db *d)
{
    for (int i = 0; i < 5; i++) {
        char features[32];
        snprintf(features, sizeof features, "m=%d", i);
        CHECK(db_add_sample(d, "A", features, 0.5 * i) == DB_OK, "add sample %d", i);
    }
    CHECK(db_add_sample(d, "A", "m=0", 7.0) == DB_OK, "a repeated sample is appended");
    CHECK(db_add_sample(d, "B", "m=9", 1.0) == DB_OK, "sample of another key");
    tally t = {0};
    CHECK(db_for_each_sample(d, "A", count_sample, &t) == DB_OK, "list samples");
    CHECK(t.count == 6 && strcmp(t.first, "m=0") == 0 && strcmp(t.last, "m=0") == 0 &&
              t.seconds_sum == 12.0,
          "6 samples of A in the order added: %d, %s .. %s, sum %g", t.count, t.first, t.last,
          t.seconds_sum);
    t = (tally){.stop_after = 1};
    CHECK(db_for_each_sample(d, "A", count_sample, &t) == DB_OK && t.count == 1,
          "stop the sample listing");

    CHECK(db_put_plan(d, "P", "s1", "slow", 2.0) == DB_OK, "put plan");
    CHECK(db_put_plan(d, "P", "s1", "fast", 1.0) == DB_OK, "put a faster plan");
    CHECK(plan_is(d, "P", "s1", "fast", 1.0), "the faster plan replaces the slower");
    CHECK(db_put_plan(d, "P", "s1", "slower", 3.0) == DB_OK, "put a slower plan");
    CHECK(db_put_plan(d, "P", "s1", "tie", 1.0) == DB_OK, "put an equally fast plan");
    CHECK(plan_is(d, "P", "s1", "fast", 1.0), "slower and equal plans keep the stored one");
    CHECK(db_put_plan(d, "P", "s0", "zero", 0.25) == DB_OK, "second shape");
    CHECK(db_put_plan(d, "Q", "s1", "other profile", 9.0) == DB_OK, "other profile");
    CHECK(plan_is(d, "Q", "s1", "other profile", 9.0) && plan_is(d, "P", "s1", "fast", 1.0),
          "plans are per profile");
    char *text = NULL;
    double seconds = -1;
    CHECK(db_get_plan(d, "P", "s9", &text, &seconds) == DB_NOT_FOUND && !text && seconds == -1,
          "unknown shape: DB_NOT_FOUND, outputs untouched");
    t = (tally){0};
    CHECK(db_for_each_plan(d, "P", count_plan, &t) == DB_OK, "list plans");
    CHECK(t.count == 2 && strcmp(t.first, "s0") == 0 && strcmp(t.last, "s1") == 0 &&
              t.seconds_sum == 1.25,
          "2 plans of P in shape order: %d, %s .. %s, %g", t.count, t.first, t.last,
          t.seconds_sum);

    /* Transactions. */
    CHECK(db_begin(d) == DB_OK, "begin");
    CHECK(db_put_plan(d, "P", "rolled back", "x", 1.0) == DB_OK, "put in a transaction");
    CHECK(db_rollback(d) == DB_OK, "rollback");
    CHECK(db_get_plan(d, "P", "rolled back", &text, &seconds) == DB_NOT_FOUND,
          "a rolled-back put is gone");
    CHECK(db_rollback(d) == DB_OK, "rollback with no transaction is harmless");
    CHECK(db_begin(d) == DB_OK, "begin again");
    for (int i = 0; i < 20; i++) {
        char shape[32];
        snprintf(shape, sizeof shape, "batch%02d", i);
        CHECK(db_put_plan(d, "R", shape, "batched", 1.0 + i) == DB_OK, "batched put %d", i);
    }
    CHECK(db_commit(d) == DB_OK, "commit");
    CHECK(raw_int(db_path(d), "SELECT count(*) FROM plans WHERE profile_key = 'R'") == 20,
          "a committed batch is seen by another connection");
    CHECK(db_commit(d) == DB_IO && db_errmsg(d)[0], "commit without a transaction fails");

    /* Bad arguments write nothing. */
    CHECK(db_put_plan(d, "P", "nan", "x", NAN) == DB_INVALID, "NaN seconds");
    CHECK(db_put_plan(d, "P", "inf", "x", INFINITY) == DB_INVALID, "infinite seconds");
    CHECK(db_add_sample(d, "P", "neg", -1.0) == DB_INVALID, "negative seconds");
    CHECK(db_put_plan(d, NULL, "s", "x", 1.0) == DB_INVALID, "NULL profile key");
    CHECK(db_put_calibration(d, "k", NULL) == DB_INVALID, "NULL model");
    CHECK(db_put_profile(NULL, 1, "x") == DB_INVALID, "NULL handle");
    CHECK(db_get_plan(d, "P", "nan", &text, &seconds) == DB_NOT_FOUND, "nothing was written");
    CHECK(strstr(db_errmsg(d), db_path(d)) != NULL, "the message names the file: %s",
          db_errmsg(d));
}

static void test_round_trips(void)
{
    char path[PATH_MAX], msg[512];
    in_root(path, "made/on/demand/tessel.db");
    db *d = NULL;
    db_status s = db_open(path, true, BUSY_MS, &d, msg, sizeof msg);
    CHECK(s == DB_OK && d, "open a new file in new folders: %s %s", db_status_str(s), msg);
    if (!d)
        return;
    CHECK(raw_int(path, "PRAGMA user_version") == DB_SCHEMA_VERSION,
          "the schema version is DB_SCHEMA_VERSION");
    sqlite3 *conn;
    char mode[16] = "";
    if (sqlite3_open_v2(path, &conn, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *stmt;
        if (sqlite3_prepare_v2(conn, "PRAGMA journal_mode", -1, &stmt, NULL) == SQLITE_OK &&
            sqlite3_step(stmt) == SQLITE_ROW)
            snprintf(mode, sizeof mode, "%s", (const char *)sqlite3_column_text(stmt, 0));
        sqlite3_finalize(stmt);
    }
    sqlite3_close_v2(conn);
    CHECK(strcmp(mode, "wal") == 0, "the file is in WAL mode: %s", mode);

    test_profiles_and_calibrations(d);
    test_samples_and_plans(d);
    db_close(d);

    /* Reopened read-only, everything is there, and writes are refused. */
    s = db_open(path, false, BUSY_MS, &d, msg, sizeof msg);
    CHECK(s == DB_OK && d, "reopen read-only: %s %s", db_status_str(s), msg);
    if (!d)
        return;
    CHECK(plan_is(d, "P", "s1", "fast", 1.0) && calibration_is(d, "fp=01 isa=avx2", "model v2"),
          "records survive a reopen");
    CHECK(db_put_plan(d, "P", "s1", "x", 0.1) == DB_READONLY, "put on a read-only handle");
    CHECK(db_begin(d) == DB_READONLY, "begin on a read-only handle");
    CHECK(plan_is(d, "P", "s1", "fast", 1.0), "the refused put changed nothing");
    db_close(d);

    /* A read-only open of an empty file finds nothing and creates nothing. */
    char empty[PATH_MAX];
    in_root(empty, "empty.db");
    write_file(empty, "", 0);
    s = db_open(empty, false, BUSY_MS, &d, msg, sizeof msg);
    CHECK(s == DB_OK, "read-only open of an empty file: %s %s", db_status_str(s), msg);
    char *text = NULL;
    tally t = {0};
    CHECK(d && db_get_calibration(d, "k", &text) == DB_NOT_FOUND &&
              db_for_each_plan(d, "P", count_plan, &t) == DB_OK && t.count == 0,
          "an empty file has no records");
    db_close(d);
    struct stat st;
    CHECK(stat(empty, &st) == 0 && st.st_size == 0, "the empty file stays empty");

    for (int i = 0; i <= DB_INVALID; i++)
        CHECK(db_status_str((db_status)i)[0] != '\0', "status %d has a description", i);
}

/* ---- missing, corrupt, newer ---- */

static void test_missing(void)
{
    char folder[PATH_MAX], path[PATH_MAX], msg[512];
    in_root(folder, "missing");
    in_root(path, "missing/deeper/tessel.db");
    db *d = (db *)&d; /* must be cleared */
    db_status s = db_open(path, false, BUSY_MS, &d, msg, sizeof msg);
    CHECK(s == DB_MISSING && d == NULL, "read-only open of a missing file: %s",
          db_status_str(s));
    CHECK(strstr(msg, path) && strstr(msg, "does not exist"), "the message says so: %s", msg);
    CHECK(!exists(folder), "nothing is created on a read-only open");

    mkdir(folder, 0700);
    in_root(path, "missing/tessel.db");
    s = db_open(path, false, BUSY_MS, &d, msg, sizeof msg);
    CHECK(s == DB_MISSING && entries_in(folder) == 0,
          "missing file in an existing folder: %s, %d entries", db_status_str(s),
          entries_in(folder));
}

/* Whether the folder of path holds `entries` files, not counting the
 * -wal and -shm files SQLite keeps beside a WAL file a read-only
 * connection has read: it may not checkpoint, so it leaves them (empty
 * here) for the next writer, which removes them. */
static bool nothing_new_beside(const char *path, int entries)
{
    char folder[PATH_MAX], wal[PATH_MAX + 8], shm[PATH_MAX + 8];
    beside(folder, path, ".");
    snprintf(wal, sizeof wal, "%s-wal", path);
    snprintf(shm, sizeof shm, "%s-shm", path);
    return entries_in(folder) - exists(wal) - exists(shm) == entries;
}

/* Opens path both ways; each must fail with `expected`, the file's bytes
 * must stay as they were, and nothing else may appear beside it. */
static void expect_refused(const char *path, db_status expected, const char *what)
{
    size_t len;
    char *before = read_file(path, &len);
    char folder[PATH_MAX];
    int entries = entries_in(beside(folder, path, "."));
    for (int writable = 0; writable < 2; writable++) {
        const char *mode = writable ? "writable" : "read-only";
        db *d = NULL;
        char msg[512] = "";
        db_status s = db_open(path, writable, BUSY_MS, &d, msg, sizeof msg);
        CHECK(s == expected && !d, "%s, %s open: %s, want %s (%s)", what, mode,
              db_status_str(s), db_status_str(expected), msg);
        CHECK(strstr(msg, path) != NULL, "%s: the message names the file: %s", what, msg);
        CHECK(before && same_bytes(path, before, len), "%s, %s open: the bytes are unchanged",
              what, mode);
        CHECK(nothing_new_beside(path, entries), "%s, %s open: no new files beside it", what,
              mode);
        db_close(d);
    }
    free(before);
}

/* A real database with a few hundred rows, closed (so fully checkpointed). */
static bool make_filled_db(const char *path)
{
    db *d = NULL;
    if (db_open(path, true, BUSY_MS, &d, NULL, 0) != DB_OK)
        return false;
    bool ok = db_begin(d) == DB_OK;
    char shape[32], text[256];
    memset(text, 'p', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    for (int i = 0; i < 300 && ok; i++) {
        snprintf(shape, sizeof shape, "shape%03d", i);
        ok = db_put_plan(d, "P", shape, text, 1.0 + i) == DB_OK &&
             db_add_sample(d, "P", shape, 0.5) == DB_OK;
    }
    ok = ok && db_commit(d) == DB_OK;
    db_close(d);
    return ok;
}

static void test_corrupt(void)
{
    char folder[PATH_MAX], path[PATH_MAX];
    in_root(folder, "corrupt");
    mkdir(folder, 0700);

    /* Random bytes. */
    in_root(path, "corrupt/random.db");
    char noise[8192];
    test_rng r = {0xdb5eed};
    for (size_t i = 0; i < sizeof noise; i++)
        noise[i] = (char)(test_rng_next(&r) >> 56);
    CHECK(write_file(path, noise, sizeof noise), "write random bytes");
    expect_refused(path, DB_CORRUPT, "random bytes");

    /* A real database truncated: to fractions, inside a page, inside the
     * 100-byte header. */
    char real[PATH_MAX];
    in_root(real, "corrupt/real.db");
    CHECK(make_filled_db(real), "fill a real database");
    size_t len;
    char *bytes = read_file(real, &len);
    CHECK(bytes && len > 16 * 4096, "the real database spans many pages: %zu bytes", len);
    if (!bytes)
        return;
    remove(real);
    const size_t cuts[] = {len / 2, len / 4, len * 3 / 4 + 17, 4096, 1000, 100, 50};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        in_root(path, "corrupt/truncated.db");
        CHECK(write_file(path, bytes, cuts[i]), "write the truncated copy");
        char what[64];
        snprintf(what, sizeof what, "truncated to %zu of %zu bytes", cuts[i], len);
        expect_refused(path, DB_CORRUPT, what);
        remove(path);
    }
    free(bytes);
}

static void test_version(void)
{
    char folder[PATH_MAX], path[PATH_MAX];
    in_root(folder, "version");
    mkdir(folder, 0700);
    in_root(path, "version/newer.db");
    CHECK(make_filled_db(path), "fill a database");
    CHECK(raw_exec(path, "PRAGMA user_version = 2") == SQLITE_OK, "make its schema newer");
    expect_refused(path, DB_VERSION, "newer schema");
    CHECK(raw_int(path, "SELECT count(*) FROM plans") == 300, "its records are all there");

    in_root(path, "version/foreign.db");
    CHECK(raw_exec(path, "CREATE TABLE notes (text); INSERT INTO notes VALUES ('mine')") ==
              SQLITE_OK,
          "another program's database");
    expect_refused(path, DB_VERSION, "another program's database");
    CHECK(raw_int(path, "SELECT count(*) FROM notes") == 1, "its table is untouched");
}

/* ---- locked ---- */

static void test_locked(void)
{
    char path[PATH_MAX], msg[512];
    in_root(path, "locked.db");
    CHECK(make_filled_db(path), "fill a database");

    /* Another connection in exclusive locking mode that has written keeps
     * the file locked for as long as it is open: even reads wait. */
    sqlite3 *holder;
    int rc = sqlite3_open_v2(path, &holder, SQLITE_OPEN_READWRITE, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(holder,
                          "PRAGMA locking_mode = EXCLUSIVE;"
                          "INSERT INTO samples (profile_key, features, seconds) "
                          "VALUES ('H', 'holder', 1)",
                          NULL, NULL, NULL);
    CHECK(rc == SQLITE_OK, "the holder locks the file: %s", sqlite3_errmsg(holder));
    for (int writable = 0; writable < 2; writable++) {
        db *d = NULL;
        struct timespec start;
        clock_gettime(CLOCK_MONOTONIC, &start);
        db_status s = db_open(path, writable, BUSY_MS, &d, msg, sizeof msg);
        double waited = seconds_since(&start);
        CHECK(s == DB_LOCKED && !d, "%s open of a locked file: %s (%s)",
              writable ? "writable" : "read-only", db_status_str(s), msg);
        CHECK(waited >= 0.9 * BUSY_MS / 1000.0 && waited < 5.0,
              "it waited about the busy timeout: %.3f s", waited);
        CHECK(strstr(msg, path) && strstr(msg, "locked"), "the message says locked: %s", msg);
        db_close(d);
    }
    sqlite3_close_v2(holder);

    /* A writer in the middle of a transaction blocks our writes, not our
     * reads (WAL), and its rollback leaves everything as it was. */
    db *d = NULL;
    db_status s = db_open(path, true, BUSY_MS, &d, msg, sizeof msg);
    CHECK(s == DB_OK, "open once the holder is gone: %s %s", db_status_str(s), msg);
    if (!d)
        return;
    CHECK(db_put_plan(d, "P", "mine", "before", 1.0) == DB_OK, "put before the lock");
    sqlite3 *writer;
    rc = sqlite3_open_v2(path, &writer, SQLITE_OPEN_READWRITE, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(writer,
                          "BEGIN IMMEDIATE; UPDATE plans SET plan_text = 'theirs' "
                          "WHERE shape_key = 'mine'",
                          NULL, NULL, NULL);
    CHECK(rc == SQLITE_OK, "another writer takes the write lock");
    db *second = NULL;
    s = db_open(path, true, BUSY_MS, &second, msg, sizeof msg);
    CHECK(s == DB_OK, "a writable open does not wait for the writer: %s %s", db_status_str(s),
          msg);
    db_close(second);
    CHECK(db_put_plan(d, "P", "mine", "blocked", 0.5) == DB_LOCKED, "a put waits, then DB_LOCKED");
    CHECK(strstr(db_errmsg(d), "locked") != NULL, "and says so: %s", db_errmsg(d));
    CHECK(db_begin(d) == DB_LOCKED, "so does begin");
    CHECK(plan_is(d, "P", "mine", "before", 1.0), "reads go on while the other writes");
    sqlite3_exec(writer, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close_v2(writer);
    CHECK(db_put_plan(d, "P", "mine", "after", 0.5) == DB_OK, "the lock gone, puts work");
    CHECK(plan_is(d, "P", "mine", "after", 0.5), "and are stored");
    tally t = {0};
    CHECK(db_for_each_plan(d, "P", count_plan, &t) == DB_OK && t.count == 301,
          "all earlier records are intact: %d plans", t.count);
    t = (tally){0};
    CHECK(db_for_each_sample(d, "H", count_sample, &t) == DB_OK && t.count == 1,
          "and the holder's committed write too");
    db_close(d);
}

/* ---- read-only file and folder ---- */

/* What the unprivileged child reports, one db_status each. */
enum {
    RO_FILE_OPEN_WRITABLE,  /* 0444 file, writable folder */
    RO_FILE_OPEN_READ,
    RO_FILE_RECORD,         /* DB_OK if the record read back right */
    RO_FILE_PUT,            /* put through the read-only handle */
    RO_DIR_OPEN_WRITABLE,   /* writable file in a 0555 folder */
    RO_DIR_OPEN_READ,
    RO_DIR_RECORD,
    RO_DIR_NEW_FILE,        /* writable open of a new file in the 0555 folder */
    RO_DIR_NEW_FOLDER,      /* ... of a file in a new folder under it */
    RO_MESSAGES,            /* DB_OK if the refusals' messages named the file */
    RO_RESULTS
};

/* Opens path read-only and reads back one record of make_filled_db;
 * DB_OK if it is right. put, if given, gets the status of a write. */
static db_status open_and_read(const char *path, db_status *put)
{
    db *d = NULL;
    db_status s = db_open(path, false, BUSY_MS, &d, NULL, 0);
    if (s != DB_OK)
        return s;
    char *text = NULL;
    double seconds = 0;
    s = db_get_plan(d, "P", "shape007", &text, &seconds);
    if (s == DB_OK && (seconds != 8.0 || strlen(text) != 255))
        s = DB_IO;
    free(text);
    if (put)
        *put = db_put_plan(d, "P", "shape007", "x", 0.1);
    db_close(d);
    return s;
}

static void read_only_child(const char *ro_file, const char *ro_dir_file, db_status *out)
{
    char msg[512], path[PATH_MAX];
    db *d = NULL;
    bool named = true;

    out[RO_FILE_OPEN_WRITABLE] = db_open(ro_file, true, BUSY_MS, &d, msg, sizeof msg);
    named &= strstr(msg, ro_file) != NULL;
    db_close(d);
    out[RO_FILE_OPEN_READ] = db_open(ro_file, false, BUSY_MS, &d, NULL, 0);
    db_close(d);
    out[RO_FILE_RECORD] = open_and_read(ro_file, &out[RO_FILE_PUT]);

    out[RO_DIR_OPEN_WRITABLE] = db_open(ro_dir_file, true, BUSY_MS, &d, msg, sizeof msg);
    named &= strstr(msg, ro_dir_file) != NULL;
    db_close(d);
    out[RO_DIR_OPEN_READ] = db_open(ro_dir_file, false, BUSY_MS, &d, NULL, 0);
    db_close(d);
    out[RO_DIR_RECORD] = open_and_read(ro_dir_file, NULL);

    beside(path, ro_dir_file, "new.db");
    out[RO_DIR_NEW_FILE] = db_open(path, true, BUSY_MS, &d, msg, sizeof msg);
    named &= strstr(msg, path) != NULL;
    db_close(d);
    beside(path, ro_dir_file, "sub/new.db");
    out[RO_DIR_NEW_FOLDER] = db_open(path, true, BUSY_MS, &d, msg, sizeof msg);
    named &= strstr(msg, path) != NULL;
    db_close(d);
    out[RO_MESSAGES] = named ? DB_OK : DB_IO;
}

/* Runs read_only_child without root: in this process if it is not root,
 * else in a child that gives root up. Returns false (and the caller
 * skips) only if root cannot be given up. */
static bool run_unprivileged(const char *ro_file, const char *ro_dir_file, db_status *out)
{
    if (geteuid() != 0) {
        read_only_child(ro_file, ro_dir_file, out); /* permissions bind us already */
        return true;
    }
    int fds[2];
    if (pipe(fds) != 0)
        return false;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        bool dropped = setgroups(0, NULL) == 0 && setgid(UNPRIVILEGED_ID) == 0 &&
                       setuid(UNPRIVILEGED_ID) == 0;
        if (!dropped)
            _exit(77);
        db_status results[RO_RESULTS];
        read_only_child(ro_file, ro_dir_file, results);
        bool sent = write(fds[1], results, sizeof results) == (ssize_t)sizeof results;
        _exit(sent ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = pid > 0 ? read(fds[0], out, RO_RESULTS * sizeof *out) : -1;
    close(fds[0]);
    int status = 0;
    if (pid > 0)
        waitpid(pid, &status, 0);
    if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 77)
        return false;
    CHECK(pid > 0 && got == (ssize_t)(RO_RESULTS * sizeof *out) && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0,
          "the unprivileged child ran and reported");
    return true;
}

static void test_read_only(void)
{
    /* Files and folders belong to the unprivileged user (when root), so
     * that the permission bits alone decide. */
    bool as_root = geteuid() == 0;
    char file_dir[PATH_MAX], ro_file[PATH_MAX], ro_dir[PATH_MAX], ro_dir_file[PATH_MAX];
    in_root(file_dir, "ro_file");
    in_root(ro_dir, "ro_dir");
    mkdir(file_dir, 0755);
    mkdir(ro_dir, 0755);
    in_root(ro_file, "ro_file/tessel.db");
    in_root(ro_dir_file, "ro_dir/tessel.db");
    CHECK(make_filled_db(ro_file) && make_filled_db(ro_dir_file), "fill two databases");
    chmod(root, 0755); /* let the child in */
    if (as_root) {
        const char *owned[] = {file_dir, ro_file, ro_dir, ro_dir_file};
        for (int i = 0; i < 4; i++)
            CHECK(chown(owned[i], UNPRIVILEGED_ID, UNPRIVILEGED_ID) == 0, "chown %s", owned[i]);
    }
    chmod(ro_file, 0444);
    chmod(ro_dir, 0555);
    size_t file_len, dir_file_len;
    char *file_bytes = read_file(ro_file, &file_len);
    char *dir_file_bytes = read_file(ro_dir_file, &dir_file_len);

    db_status got[RO_RESULTS];
    if (run_unprivileged(ro_file, ro_dir_file, got)) {
        const struct {
            int index;
            db_status want;
            const char *what;
        } expected[] = {
            {RO_FILE_OPEN_WRITABLE, DB_READONLY, "writable open of a 0444 file"},
            {RO_FILE_OPEN_READ, DB_OK, "read-only open of a 0444 file"},
            {RO_FILE_RECORD, DB_OK, "a record of the 0444 file reads back"},
            {RO_FILE_PUT, DB_READONLY, "put through a read-only handle"},
            {RO_DIR_OPEN_WRITABLE, DB_READONLY, "writable open in a 0555 folder"},
            {RO_DIR_OPEN_READ, DB_OK, "read-only open in a 0555 folder"},
            {RO_DIR_RECORD, DB_OK, "a record in the 0555 folder reads back"},
            {RO_DIR_NEW_FILE, DB_READONLY, "a new file in a 0555 folder"},
            {RO_DIR_NEW_FOLDER, DB_READONLY, "a new folder in a 0555 folder"},
            {RO_MESSAGES, DB_OK, "the refusals' messages name the file"},
        };
        for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
            CHECK(got[expected[i].index] == expected[i].want, "%s: %s, want %s", expected[i].what,
                  db_status_str(got[expected[i].index]), db_status_str(expected[i].want));
        CHECK(entries_in(ro_dir) == 1, "nothing was created in the 0555 folder: %d entries",
              entries_in(ro_dir));
    } else {
        printf("  db: read-only file and folder cases skipped: cannot give up root\n");
    }
    CHECK(file_bytes && same_bytes(ro_file, file_bytes, file_len),
          "the 0444 file's bytes are unchanged");
    CHECK(dir_file_bytes && same_bytes(ro_dir_file, dir_file_bytes, dir_file_len),
          "the file in the 0555 folder is unchanged");
    free(file_bytes);
    free(dir_file_bytes);
    chmod(ro_dir, 0755);
    chmod(root, 0700);
    CHECK(raw_int(ro_file, "SELECT count(*) FROM plans") == 300 &&
              raw_int(ro_dir_file, "SELECT count(*) FROM plans") == 300,
          "both still hold all their records");
}

/* ---- two processes ---- */

enum { WRITERS = 2, BATCHES = 10, SAMPLES_PER_BATCH = 20, PLANS_PER_BATCH = 5, SHARED_SHAPES = 8 };

/* One tuner: its own samples and plans in batches, plus a time for each
 * shared shape, where the faster of the two tuners must win. Returns the
 * number of calls that failed. */
static int tuner(const char *path, int id)
{
    db *d = NULL;
    char msg[512];
    if (db_open(path, true, 10000, &d, msg, sizeof msg) != DB_OK) {
        fprintf(stderr, "tuner %d: %s\n", id, msg); /* the child's only way to say why */
        return 100;
    }
    int failures = 0;
    char key[32], text[64];
    snprintf(key, sizeof key, "tuner%d", id);
    for (int b = 0; b < BATCHES; b++) {
        failures += db_begin(d) != DB_OK;
        for (int i = 0; i < SAMPLES_PER_BATCH; i++) {
            snprintf(text, sizeof text, "b%d i%d", b, i);
            failures += db_add_sample(d, key, text, 1e-3 * i) != DB_OK;
        }
        for (int i = 0; i < PLANS_PER_BATCH; i++) {
            snprintf(text, sizeof text, "shape b%02d i%d", b, i);
            failures += db_put_plan(d, key, text, "plan", 1.0) != DB_OK;
        }
        failures += db_commit(d) != DB_OK;
        /* Outside a transaction: each put is its own. */
        snprintf(text, sizeof text, "shared%d", b % SHARED_SHAPES);
        double seconds = id == 0 ? 2.0 + b : 1.0 + b;
        failures += db_put_plan(d, "shared", text, id == 0 ? "slow" : "fast", seconds) != DB_OK;
    }
    failures += db_put_calibration(d, key, "model") != DB_OK;
    db_close(d);
    return failures;
}

/* What two tuners racing on path must have left: all rows of each, and
 * the faster time of each shared shape. */
static void check_race(const char *path, const char *label)
{
    db *d = NULL;
    char msg[512];
    db_status s = db_open(path, false, BUSY_MS, &d, msg, sizeof msg);
    CHECK(s == DB_OK, "%s: open after the race: %s %s", label, db_status_str(s), msg);
    if (!d)
        return;
    for (int w = 0; w < WRITERS; w++) {
        char key[32];
        snprintf(key, sizeof key, "tuner%d", w);
        tally samples = {0}, plans = {0};
        CHECK(db_for_each_sample(d, key, count_sample, &samples) == DB_OK &&
                  samples.count == BATCHES * SAMPLES_PER_BATCH,
              "%s: writer %d: %d of %d samples", label, w, samples.count,
              BATCHES * SAMPLES_PER_BATCH);
        CHECK(db_for_each_plan(d, key, count_plan, &plans) == DB_OK &&
                  plans.count == BATCHES * PLANS_PER_BATCH,
              "%s: writer %d: %d of %d plans", label, w, plans.count, BATCHES * PLANS_PER_BATCH);
        CHECK(calibration_is(d, key, "model"), "%s: writer %d: its calibration", label, w);
    }
    /* Shape sharedK was put with 1+b by the fast tuner and 2+b by the slow
     * one, for b = K and K + SHARED_SHAPES: the least is 1+K. */
    for (int k = 0; k < SHARED_SHAPES; k++) {
        char shape[32];
        snprintf(shape, sizeof shape, "shared%d", k);
        CHECK(plan_is(d, "shared", shape, "fast", 1.0 + k), "%s: %s keeps the fastest plan",
              label, shape);
    }
    db_close(d);
}

static void test_two_processes(void)
{
    char path[PATH_MAX];
    in_root(path, "race/tessel.db"); /* both create the folder and the file */
    int go[2];
    CHECK(pipe(go) == 0, "pipe");
    fflush(stdout);
    pid_t pids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        if (pids[w] == 0) {
            close(go[1]);
            char byte;
            while (read(go[0], &byte, 1) > 0) {
            } /* start together when the pipe closes */
            int failures = tuner(path, w);
            _exit(failures > 100 ? 100 : failures);
        }
        CHECK(pids[w] > 0, "fork writer %d", w);
    }
    close(go[0]);
    close(go[1]);
    for (int w = 0; w < WRITERS; w++) {
        int status = 0;
        if (pids[w] > 0)
            waitpid(pids[w], &status, 0);
        CHECK(pids[w] > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "writer process %d: %d failed calls", w,
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    check_race(path, "two processes");
}

typedef struct {
    const char *path;
    int id;
    int failures;
} tuner_thread;

static void *run_tuner_thread(void *arg)
{
    tuner_thread *t = arg;
    t->failures = tuner(t->path, t->id);
    return NULL;
}

/* The same race between two handles of one process: SQLite's locks work
 * differently there (POSIX locks are per process, so it keeps its own
 * table), and a tool may well open two handles. */
static void test_two_threads(void)
{
    char path[PATH_MAX];
    in_root(path, "thread_race/tessel.db");
    tuner_thread threads[WRITERS];
    pthread_t ids[WRITERS];
    bool started[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        threads[w] = (tuner_thread){.path = path, .id = w};
        started[w] = pthread_create(&ids[w], NULL, run_tuner_thread, &threads[w]) == 0;
        CHECK(started[w], "start writer thread %d", w);
    }
    for (int w = 0; w < WRITERS; w++) {
        if (!started[w])
            continue;
        pthread_join(ids[w], NULL);
        CHECK(threads[w].failures == 0, "writer thread %d: %d failed calls", w,
              threads[w].failures);
    }
    check_race(path, "two threads");
}

/* ---- silence ---- */

/* Goes through a failure of each kind; returns whether each gave the
 * status it should (checked by the caller once output is restored). */
static bool exercise_everything_quietly(void)
{
    char folder[PATH_MAX], path[PATH_MAX], bad[PATH_MAX], msg[512];
    mkdir(in_root(folder, "quiet"), 0700);
    in_root(path, "quiet/tessel.db");
    in_root(bad, "quiet/bad.db");
    db *d = NULL;
    bool as_expected = db_open(bad, false, BUSY_MS, &d, msg, sizeof msg) == DB_MISSING;
    as_expected &= write_file(bad, "not a database at all, not at all", 33);
    as_expected &= db_open(bad, true, BUSY_MS, &d, msg, sizeof msg) == DB_CORRUPT;
    as_expected &= db_open(path, true, BUSY_MS, &d, msg, sizeof msg) == DB_OK;
    if (d) {
        char *text = NULL;
        as_expected &= db_put_plan(d, "P", "s", "x", 1.0) == DB_OK;
        as_expected &= db_put_plan(d, "P", "s", "x", NAN) == DB_INVALID;
        as_expected &= db_commit(d) == DB_IO; /* no transaction */
        as_expected &= db_get_plan(d, "P", "none", &text, NULL) == DB_NOT_FOUND;
        db_close(d);
    }
    as_expected &= raw_exec(path, "PRAGMA user_version = 5") == SQLITE_OK;
    as_expected &= db_open(path, true, BUSY_MS, &d, msg, sizeof msg) == DB_VERSION;
    return as_expected;
}

static void test_never_prints(void)
{
    char capture[PATH_MAX];
    in_root(capture, "captured_output");
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    int fd = open(capture, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || saved_out < 0 || saved_err < 0) {
        CHECK(false, "cannot capture output");
        return;
    }
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    bool as_expected = exercise_everything_quietly();
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    CHECK(as_expected, "each failure gave its status while output was captured");
    struct stat st = {0};
    CHECK(stat(capture, &st) == 0 && st.st_size == 0, "the layer printed %lld bytes",
          (long long)st.st_size);
}

void suite_db(void)
{
    snprintf(root, sizeof root, "/tmp/tessel-db-XXXXXX");
    if (!mkdtemp(root)) {
        CHECK(false, "mkdtemp: %s", strerror(errno));
        return;
    }
    test_default_path();
    test_round_trips();
    test_missing();
    test_corrupt();
    test_version();
    test_locked();
    test_read_only();
    test_two_processes();
    test_two_threads();
    test_never_prints();
    remove_tree(root);
    CHECK(!exists(root), "the temp folder %s is removed", root);
}
