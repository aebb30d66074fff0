/*
 * store.h - keys and loading of what the tuning database holds for this
 * machine: the calibrated cost model and the tuned plans (see store.c).
 */
#ifndef TESSEL_TUNE_STORE_H
#define TESSEL_TUNE_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include "plan/plan.h"

/* "fp=<fingerprint hex> isa=avx512 threads=2": calibrations and tuned
 * plans belong to one machine, ISA class and thread count. */
void tune_profile_key(const hw_profile *hw, int threads, char *buf, size_t len);

/* "gemm M=17 N=768 K=768 a=N b=N packed_kc=0", and back (0, or -1). */
void tune_shape_key(const gemm_shape *s, char *buf, size_t len);
int tune_shape_key_parse(const char *text, gemm_shape *s);

/* TESSEL_DB=off: no database at all, the analytic model plans. */
bool tune_db_disabled(void);

typedef struct tune_plan_entry {
    gemm_shape shape;
    plan_choice choice;
} tune_plan_entry;

/* Tuned plans sorted by shape. */
typedef struct tune_plans {
    tune_plan_entry *entries;
    size_t count, capacity;
} tune_plans;

/* The tuned choice for a shape, or NULL. */
const plan_choice *tune_plans_find(const tune_plans *t, const gemm_shape *s);
void tune_plans_free(tune_plans *t);

typedef enum tune_load_status {
    TUNE_LOAD_OK,              /* calibration loaded (and any tuned plans) */
    TUNE_LOAD_NOT_CALIBRATED,  /* the database is fine but has no calibration here */
    TUNE_LOAD_UNUSABLE,        /* missing, corrupt, locked, unreadable: msg says which */
    TUNE_LOAD_OFF              /* TESSEL_DB=off */
} tune_load_status;

/* Reads this profile's calibration into *cost (left alone if there is
 * none) and its tuned plans into *plans, read-only: the file is never
 * created or changed. msg says what happened unless OK or OFF. */
tune_load_status tune_load(const hw_profile *hw, int threads, cost_model *cost,
                           tune_plans *plans, char *msg, size_t len);

#endif /* TESSEL_TUNE_STORE_H */
