/*
 * store.c - what calibration and tuning keep in the tuning database
 * (src/db/), and what a context loads back: the text keys of a profile and
 * of a shape, the cost model of this machine, ISA and thread count, and
 * its tuned plans, held in memory as a sorted table so that a plan-cache
 * miss finds a tuned plan by binary search instead of a query.
 * TESSEL_DB=off turns the database off (tests use it to plan from the
 * analytic model alone, whatever a user has tuned).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "tune/store.h"

/* The library only reads, and a reader should not stall a call for long
 * behind a writer: WAL readers do not wait on writers at all, so this
 * only matters for a database held in exclusive mode. */
static const int LOAD_BUSY_MS = 200;

void tune_profile_key(const hw_profile *hw, int threads, char *buf, size_t len)
{
    snprintf(buf, len, "fp=%016" PRIx64 " isa=%s threads=%d", hw->fingerprint,
             hw_isa_name(hw->isa), threads);
}

void tune_shape_key(const gemm_shape *s, char *buf, size_t len)
{
    snprintf(buf, len, "gemm M=%" PRId64 " N=%" PRId64 " K=%" PRId64 " a=%c b=%c packed_kc=%" PRId64,
             s->M, s->N, s->K, s->transa ? 'T' : 'N', s->transb ? 'T' : 'N', s->prepacked_kc);
}

int tune_shape_key_parse(const char *text, gemm_shape *s)
{
    long long M, N, K, kc;
    char a, b;
    int used = 0;
    if (sscanf(text, "gemm M=%lld N=%lld K=%lld a=%c b=%c packed_kc=%lld%n", &M, &N, &K, &a, &b,
               &kc, &used) != 6 || text[used] != '\0')
        return -1;
    if (M < 0 || N < 0 || K < 0 || kc < 0 || (a != 'N' && a != 'T') || (b != 'N' && b != 'T'))
        return -1;
    *s = (gemm_shape){.M = M, .N = N, .K = K, .transa = a == 'T', .transb = b == 'T',
                      .prepacked_kc = kc};
    return 0;
}

bool tune_db_disabled(void)
{
    const char *v = getenv("TESSEL_DB");
    return v && strcmp(v, "off") == 0;
}

/* ---- the tuned-plan table ---- */

static int compare_shapes(const gemm_shape *x, const gemm_shape *y)
{
    const int64_t a[] = {x->M, x->N, x->K, x->transa, x->transb, x->prepacked_kc};
    const int64_t b[] = {y->M, y->N, y->K, y->transa, y->transb, y->prepacked_kc};
    for (int i = 0; i < 6; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

static int compare_entries(const void *x, const void *y)
{
    return compare_shapes(&((const tune_plan_entry *)x)->shape,
                          &((const tune_plan_entry *)y)->shape);
}

const plan_choice *tune_plans_find(const tune_plans *t, const gemm_shape *s)
{
    size_t lo = 0, hi = t->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = compare_shapes(&t->entries[mid].shape, s);
        if (c == 0)
            return &t->entries[mid].choice;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

void tune_plans_free(tune_plans *t)
{
    free(t->entries);
    t->entries = NULL;
    t->count = t->capacity = 0;
}

static int add_plan(void *arg, const char *shape_key, const char *plan_text, double seconds)
{
    tune_plans *t = arg;
    (void)seconds;
    tune_plan_entry e;
    /* Rows this build cannot read are skipped, never trusted. */
    if (tune_shape_key_parse(shape_key, &e.shape) != 0 ||
        plan_choice_parse(plan_text, &e.choice) != 0)
        return 0;
    if (t->count == t->capacity) {
        size_t grown = t->capacity ? t->capacity * 2 : 64;
        tune_plan_entry *more = realloc(t->entries, grown * sizeof *more);
        if (!more)
            return 1; /* keep what fits */
        t->entries = more;
        t->capacity = grown;
    }
    t->entries[t->count++] = e;
    return 0;
}

/* ---- loading ---- */

tune_load_status tune_load(const hw_profile *hw, int threads, cost_model *cost,
                           tune_plans *plans, char *msg, size_t len)
{
    memset(plans, 0, sizeof *plans);
    if (len > 0)
        msg[0] = '\0';
    if (tune_db_disabled())
        return TUNE_LOAD_OFF;
    db *d = NULL;
    char why[512];
    db_status st = db_open(NULL, false, LOAD_BUSY_MS, &d, why, sizeof why);
    if (st != DB_OK) {
        snprintf(msg, len, "%s; planning with the analytic model%s", why,
                 st == DB_MISSING ? " (run `tessel tune` to calibrate)" : "");
        return TUNE_LOAD_UNUSABLE;
    }
    char key[128];
    tune_profile_key(hw, threads, key, sizeof key);
    char *text = NULL;
    tune_load_status result = TUNE_LOAD_NOT_CALIBRATED;
    st = db_get_calibration(d, key, &text);
    if (st == DB_OK) {
        cost_model loaded;
        if (cost_model_parse(text, &loaded) == 0) {
            *cost = loaded;
            result = TUNE_LOAD_OK;
        } else {
            snprintf(msg, len, "%s: the calibration for %s is unreadable; planning with the "
                     "analytic model", db_path(d), key);
            result = TUNE_LOAD_UNUSABLE;
        }
    } else if (st != DB_NOT_FOUND) {
        snprintf(msg, len, "%s; planning with the analytic model", db_errmsg(d));
        result = TUNE_LOAD_UNUSABLE;
    } else {
        snprintf(msg, len, "%s: no calibration for %s; planning with the analytic model "
                 "(run `tessel tune`)", db_path(d), key);
    }
    free(text);
    st = db_for_each_plan(d, key, add_plan, plans);
    if (st != DB_OK && st != DB_NOT_FOUND && result != TUNE_LOAD_UNUSABLE) {
        snprintf(msg, len, "%s; tuned plans not loaded", db_errmsg(d));
        result = TUNE_LOAD_UNUSABLE;
    }
    if (plans->count > 1)
        qsort(plans->entries, plans->count, sizeof plans->entries[0], compare_entries);
    db_close(d);
    return result;
}
