/*
 * db_open.c - finding, opening and checking the tuning database. The file
 * is read and checked (header, schema version, owner, PRAGMA quick_check)
 * before anything is written, so a corrupt, foreign or newer file is
 * reported and left byte for byte as it was; only an empty file is given
 * the schema. A read-only open never creates the file or its folder. Every
 * failure becomes a status and one line naming the file and the cause;
 * nothing here prints.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "db/db_internal.h"

/* Marks the file as tessel's (PRAGMA application_id, "tesl" in ASCII), so
 * that TESSEL_DB pointing at another program's database leaves it alone.
 * The schema below sets the same number. */
enum { TESSEL_APPLICATION_ID = 0x7465736c };

/* Created in one transaction, so another process sees all of it or none.
 * user_version must equal DB_SCHEMA_VERSION (tests/test_db.c checks). */
static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS profiles ("
    "  fingerprint TEXT PRIMARY KEY," /* 16 hex digits */
    "  description TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS calibrations ("
    "  profile_key TEXT PRIMARY KEY,"
    "  model_text TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS samples ("
    "  id INTEGER PRIMARY KEY," /* the order samples were added in */
    "  profile_key TEXT NOT NULL,"
    "  features TEXT NOT NULL,"
    "  seconds REAL NOT NULL);"
    "CREATE INDEX IF NOT EXISTS samples_by_profile ON samples (profile_key, id);"
    "CREATE TABLE IF NOT EXISTS plans ("
    "  profile_key TEXT NOT NULL,"
    "  shape_key TEXT NOT NULL,"
    "  plan_text TEXT NOT NULL,"
    "  seconds REAL NOT NULL,"
    "  PRIMARY KEY (profile_key, shape_key));"
    "PRAGMA application_id = 1952805740;" /* TESSEL_APPLICATION_ID */
    "PRAGMA user_version = 1;";

const char *db_status_str(db_status s)
{
    switch (s) {
    case DB_OK: return "ok";
    case DB_MISSING: return "database file does not exist";
    case DB_CORRUPT: return "database file is corrupt";
    case DB_LOCKED: return "database locked by another process";
    case DB_READONLY: return "database may not be written";
    case DB_VERSION: return "database of a newer schema or of another program";
    case DB_IO: return "database input/output error";
    case DB_NOT_FOUND: return "no such record";
    case DB_INVALID: return "invalid argument";
    }
    return "unknown database status";
}

static db_status status_of(int rc)
{
    switch (rc & 0xff) { /* the primary code of an extended one */
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return DB_LOCKED;
    case SQLITE_READONLY:
    case SQLITE_PERM: return DB_READONLY;
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT: return DB_CORRUPT;
    default: return DB_IO;
    }
}

static const char *cause_of(int rc)
{
    if (rc == SQLITE_READONLY_DIRECTORY)
        return "is in a folder that may not be written";
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return "is locked by another process";
    case SQLITE_READONLY:
    case SQLITE_PERM: return "may not be written";
    case SQLITE_NOTADB: return "is not a SQLite database";
    case SQLITE_CORRUPT: return "is corrupt";
    case SQLITE_FULL: return "cannot grow, the disk is full";
    case SQLITE_CANTOPEN: return "cannot be opened";
    default: return "failed";
    }
}

db_status db_fail(db *d, int rc)
{
    const char *detail = d->conn ? sqlite3_errmsg(d->conn) : sqlite3_errstr(rc);
    db_status s = status_of(rc);
    if (s == DB_LOCKED)
        snprintf(d->errmsg, sizeof d->errmsg, "tessel.db: %s %s (%s, waited %d ms)", d->path,
                 cause_of(rc), detail, d->busy_ms);
    else
        snprintf(d->errmsg, sizeof d->errmsg, "tessel.db: %s %s (%s)", d->path, cause_of(rc),
                 detail);
    return s;
}

db_status db_fail_with(db *d, db_status status, const char *cause)
{
    snprintf(d->errmsg, sizeof d->errmsg, "tessel.db: %s %s", d->path, cause);
    return status;
}

static const char *nonempty_env(const char *name)
{
    const char *value = getenv(name);
    return value && *value ? value : NULL;
}

const char *db_default_path(char *buf, size_t len)
{
    const char *explicit_path = nonempty_env("TESSEL_DB");
    const char *cache = nonempty_env("XDG_CACHE_HOME");
    const char *home = nonempty_env("HOME");
    int n;
    /* The XDG base directory spec: a relative XDG_CACHE_HOME is invalid and
     * is ignored (specifications.freedesktop.org/basedir-spec). */
    if (explicit_path)
        n = snprintf(buf, len, "%s", explicit_path);
    else if (cache && cache[0] == '/')
        n = snprintf(buf, len, "%s/tessel/tessel.db", cache);
    else if (home)
        n = snprintf(buf, len, "%s/.cache/tessel/tessel.db", home);
    else
        return NULL;
    return n >= 0 && (size_t)n < len ? buf : NULL;
}

/* mkdir -p of the folders above the file, each created 0700 as the XDG
 * spec asks for a missing cache folder. */
static db_status make_folders(db *d)
{
    char *folder = strdup(d->path);
    if (!folder)
        return db_fail_with(d, DB_IO, "cannot be opened (out of memory)");
    db_status s = DB_OK;
    for (char *p = folder + 1; *p && s == DB_OK; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(folder, 0700) != 0 && errno != EEXIST) {
            int err = errno;
            bool denied = err == EACCES || err == EPERM || err == EROFS;
            snprintf(d->errmsg, sizeof d->errmsg, "tessel.db: cannot create the folder %s for %s (%s)",
                     folder, d->path, strerror(err));
            s = denied ? DB_READONLY : DB_IO;
        }
        *p = '/';
    }
    free(folder);
    return s;
}

/* Whether this process (its effective ids) may create files beside path. */
static bool folder_writable(const char *path)
{
    char *folder = strdup(path);
    if (!folder)
        return true; /* unknown: let the caller report SQLite's own error */
    char *slash = strrchr(folder, '/');
    if (slash == folder)
        slash[1] = '\0'; /* the root folder */
    else if (slash)
        *slash = '\0';
    bool writable = faccessat(AT_FDCWD, slash ? folder : ".", W_OK, AT_EACCESS) == 0;
    free(folder);
    return writable;
}

static bool wal_file_exists(const char *path)
{
    size_t n = strlen(path);
    char *wal = malloc(n + sizeof "-wal");
    if (!wal)
        return true; /* unknown: the caller then does not fall back */
    memcpy(wal, path, n);
    memcpy(wal + n, "-wal", sizeof "-wal");
    bool exists = access(wal, F_OK) == 0;
    free(wal);
    return exists;
}

/* "file:" URI for path with immutable=1 (sqlite.org/uri.html: bytes other
 * than unreserved ones are %HH escaped; "file://" + an absolute path gives
 * an empty authority, so a path starting with "//" stays a path). */
static char *immutable_uri(const char *path)
{
    static const char suffix[] = "?immutable=1";
    size_t n = strlen(path);
    char *uri = malloc(sizeof "file://" + 3 * n + sizeof suffix);
    if (!uri)
        return NULL;
    char *p = uri + sprintf(uri, "%s", path[0] == '/' ? "file://" : "file:");
    for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
        bool plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                     (*c >= '0' && *c <= '9') || strchr("/._~-", *c);
        if (plain)
            *p++ = (char)*c;
        else
            p += sprintf(p, "%%%02X", *c);
    }
    memcpy(p, suffix, sizeof suffix);
    return uri;
}

static int connect(db *d, const char *filename, int flags)
{
    int rc = sqlite3_open_v2(filename, &d->conn, flags, NULL);
    if (rc != SQLITE_OK)
        return rc;
    /* Extended codes tell SQLITE_READONLY_DIRECTORY from other read-only
     * failures; status_of() maps on the primary code. */
    sqlite3_extended_result_codes(d->conn, 1);
    /* The busy handler sleeps and retries until busy_ms have passed, then
     * the call returns SQLITE_BUSY (sqlite.org/c3ref/busy_timeout.html). */
    sqlite3_busy_timeout(d->conn, d->busy_ms);
    return SQLITE_OK;
}

static void disconnect(db *d)
{
    sqlite3_close_v2(d->conn); /* accepts NULL */
    d->conn = NULL;
}

static int query_text(sqlite3 *conn, const char *sql, char *out, size_t len)
{
    sqlite3_stmt *stmt;
    int rc = sqlite3_prepare_v2(conn, sql, -1, &stmt, NULL);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        const unsigned char *text = sqlite3_column_text(stmt, 0);
        snprintf(out, len, "%s", text ? (const char *)text : "");
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        snprintf(out, len, "%s", "");
        rc = SQLITE_OK;
    }
    sqlite3_finalize(stmt);
    return rc;
}

/* What the file holds, as the checks before any write need it. */
typedef struct contents {
    int version;        /* PRAGMA user_version */
    int application_id; /* PRAGMA application_id */
    int objects;        /* tables and indexes of any kind */
    char check[160];    /* first line of PRAGMA quick_check: "ok" when sound */
} contents;

/* One statement, so the three numbers come from one snapshot even while
 * another process is creating the schema. */
static int read_header(sqlite3 *conn, contents *c)
{
    sqlite3_stmt *stmt;
    int rc = sqlite3_prepare_v2(conn,
                                "SELECT (SELECT user_version FROM pragma_user_version),"
                                "       (SELECT application_id FROM pragma_application_id),"
                                "       (SELECT count(*) FROM sqlite_master)",
                                -1, &stmt, NULL);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        c->version = sqlite3_column_int(stmt, 0);
        c->application_id = sqlite3_column_int(stmt, 1);
        c->objects = sqlite3_column_int(stmt, 2);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(stmt);
    return rc;
}

static int read_contents(sqlite3 *conn, contents *c)
{
    int rc = read_header(conn, c);
    /* quick_check reads every page (O(N), files here are small) but skips
     * the index cross-checks of integrity_check (sqlite.org/pragma.html). */
    if (rc == SQLITE_OK)
        rc = query_text(conn, "PRAGMA quick_check(1)", c->check, sizeof c->check);
    return rc;
}

static bool is_empty(const contents *c)
{
    return c->version == 0 && c->application_id == 0 && c->objects == 0;
}

/* Whether the file can be used as it is; sets has_schema. */
static db_status judge(db *d, const contents *c)
{
    char cause[256];
    if (strcmp(c->check, "ok") != 0) {
        snprintf(cause, sizeof cause, "is corrupt (quick_check: %s)", c->check);
        return db_fail_with(d, DB_CORRUPT, cause);
    }
    if (c->application_id == TESSEL_APPLICATION_ID && c->version > DB_SCHEMA_VERSION) {
        snprintf(cause, sizeof cause,
                 "has schema version %d, newer than this build's %d; left untouched", c->version,
                 DB_SCHEMA_VERSION);
        return db_fail_with(d, DB_VERSION, cause);
    }
    if (c->application_id != TESSEL_APPLICATION_ID && !is_empty(c)) {
        snprintf(cause, sizeof cause,
                 "is not a tessel database (application_id %d, %d tables and indexes); "
                 "left untouched",
                 c->application_id, c->objects);
        return db_fail_with(d, DB_VERSION, cause);
    }
    d->has_schema = c->version == DB_SCHEMA_VERSION;
    return DB_OK;
}

static db_status open_read_only(db *d)
{
    struct stat st;
    if (stat(d->path, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return db_fail_with(d, DB_MISSING, "does not exist");
        char cause[160];
        snprintf(cause, sizeof cause, "cannot be read (%s)", strerror(errno));
        return db_fail_with(d, DB_IO, cause);
    }
    contents c = {0};
    int rc = connect(d, d->path, SQLITE_OPEN_READONLY);
    if (rc == SQLITE_OK)
        rc = read_contents(d->conn, &c);
    /* A WAL file can be read without write access only if its -wal and
     * -shm files exist or can be created, or it is opened immutable
     * (sqlite.org/wal.html#readonly). With no -wal file, everything is in
     * the main file, and a folder we may not write is one in which no
     * writer of ours can start a -wal either; so read it immutable. */
    bool blocked_by_folder = rc == SQLITE_READONLY_DIRECTORY || (rc & 0xff) == SQLITE_CANTOPEN;
    if (blocked_by_folder && !folder_writable(d->path) && !wal_file_exists(d->path)) {
        disconnect(d);
        char *uri = immutable_uri(d->path);
        if (!uri)
            return db_fail_with(d, DB_IO, "cannot be opened (out of memory)");
        rc = connect(d, uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
        free(uri);
        if (rc == SQLITE_OK)
            rc = read_contents(d->conn, &c);
    }
    if (rc != SQLITE_OK)
        return db_fail(d, rc);
    return judge(d, &c);
}

/* Gives an empty file the schema. BEGIN IMMEDIATE takes the write lock
 * first, waiting on the busy handler (a deferred transaction that reads
 * and then writes gets SQLITE_BUSY at once when another connection wrote
 * meanwhile: sqlite.org/lang_transaction.html); then the header is read
 * again, since another process may have created the schema meanwhile. */
static db_status create_schema(db *d)
{
    contents c = {0};
    int rc = sqlite3_exec(d->conn, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return db_fail(d, rc);
    rc = read_header(d->conn, &c);
    db_status s = DB_OK;
    bool ours = c.application_id == TESSEL_APPLICATION_ID;
    if (rc == SQLITE_OK && (is_empty(&c) || (ours && c.version < DB_SCHEMA_VERSION)))
        rc = sqlite3_exec(d->conn, schema_sql, NULL, NULL, NULL);
    else if (rc == SQLITE_OK && !ours)
        s = db_fail_with(d, DB_VERSION, "is not a tessel database; left untouched");
    if (rc == SQLITE_OK && s == DB_OK)
        rc = sqlite3_exec(d->conn, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        s = db_fail(d, rc);
    if (!sqlite3_get_autocommit(d->conn))
        sqlite3_exec(d->conn, "ROLLBACK", NULL, NULL, NULL);
    return s;
}

/* Write-ahead logging lets readers go on while a tuner writes, and a
 * writer wait for another (sqlite.org/wal.html). The mode is stored in the
 * file and persists, so it is read first and set only on the first open.
 * Setting it needs the file to itself, and SQLite does not call the busy
 * handler for that: when two processes create the database at once, the
 * second's switch fails at once with SQLITE_BUSY or leaves the old mode
 * (seen once in the two-process test, and reported for other projects),
 * so it is retried here, backing off, within the busy timeout. */
static db_status use_wal(db *d)
{
    char mode[16];
    int rc = query_text(d->conn, "PRAGMA journal_mode", mode, sizeof mode);
    if (rc == SQLITE_OK && strcmp(mode, "wal") == 0)
        return DB_OK;
    long waited_ms = 0, pause_ms = 1;
    for (;;) {
        rc = query_text(d->conn, "PRAGMA journal_mode = WAL", mode, sizeof mode);
        bool refused = (rc & 0xff) == SQLITE_BUSY || (rc == SQLITE_OK && strcmp(mode, "wal"));
        if (!refused || waited_ms >= d->busy_ms)
            break;
        struct timespec pause = {.tv_sec = pause_ms / 1000, .tv_nsec = pause_ms % 1000 * 1000000};
        nanosleep(&pause, NULL);
        waited_ms += pause_ms;
        pause_ms = pause_ms < 64 ? pause_ms * 2 : 64;
    }
    if (rc != SQLITE_OK)
        return db_fail(d, rc);
    if (strcmp(mode, "wal") != 0) {
        char cause[96];
        snprintf(cause, sizeof cause, "cannot use write-ahead logging (journal mode stays %s)",
                 mode);
        return db_fail_with(d, DB_IO, cause);
    }
    return DB_OK;
}

static db_status open_writable(db *d)
{
    db_status s = make_folders(d);
    if (s != DB_OK)
        return s;
    int rc = connect(d, d->path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    if ((rc & 0xff) == SQLITE_CANTOPEN && !folder_writable(d->path))
        return db_fail_with(d, DB_READONLY, "cannot be created: its folder may not be written");
    if (rc != SQLITE_OK)
        return db_fail(d, rc);
    /* SQLite opens a file it may not write read-only without an error
     * (sqlite.org/c3ref/open.html); this open is for writing. */
    if (sqlite3_db_readonly(d->conn, "main") == 1)
        return db_fail_with(d, DB_READONLY, "may not be written (file permissions)");
    contents c = {0};
    rc = read_contents(d->conn, &c);
    if (rc != SQLITE_OK)
        return db_fail(d, rc);
    s = judge(d, &c);
    if (s == DB_OK && !d->has_schema)
        s = create_schema(d);
    if (s == DB_OK)
        s = use_wal(d);
    d->has_schema = s == DB_OK;
    return s;
}

db_status db_open(const char *path, bool writable, int busy_ms, db **out, char *msg,
                  size_t msglen)
{
    if (msg && msglen)
        msg[0] = '\0';
    if (!out)
        return DB_INVALID;
    *out = NULL;
    char default_path[PATH_MAX];
    if (!path)
        path = db_default_path(default_path, sizeof default_path);
    if (!path) {
        if (msg)
            snprintf(msg, msglen, "%s", "tessel.db: no database path (TESSEL_DB, "
                                        "XDG_CACHE_HOME and HOME unset, or too long)");
        return writable ? DB_IO : DB_MISSING;
    }
    db *d = calloc(1, sizeof *d);
    if (d)
        d->path = strdup(path);
    if (!d || !d->path) {
        if (msg)
            snprintf(msg, msglen, "tessel.db: %s cannot be opened (out of memory)", path);
        free(d);
        return DB_IO;
    }
    d->writable = writable;
    d->busy_ms = busy_ms > 0 ? busy_ms : 0;
    db_status s = writable ? open_writable(d) : open_read_only(d);
    if (s != DB_OK) {
        if (msg)
            snprintf(msg, msglen, "%s", d->errmsg);
        db_close(d);
        return s;
    }
    d->errmsg[0] = '\0';
    *out = d;
    return DB_OK;
}

void db_close(db *d)
{
    if (!d)
        return;
    disconnect(d);
    free(d->path);
    free(d);
}

const char *db_path(const db *d)
{
    return d ? d->path : "";
}

const char *db_errmsg(const db *d)
{
    return d ? d->errmsg : "";
}
