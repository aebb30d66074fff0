/*
 * status.c - status names and the per-thread error message. The message is
 * thread-local so that concurrent callers each see their own failure.
 */
#include <stdarg.h>
#include <stdio.h>

#include "api/api.h"

static _Thread_local char last_error[256];

tessel_status api_fail(tessel_status status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, args);
    va_end(args);
    return status;
}

void api_clear_error(void)
{
    last_error[0] = '\0';
}

const char *tessel_last_error(void)
{
    return last_error;
}

const char *tessel_status_str(tessel_status status)
{
    switch (status) {
    case TESSEL_OK: return "ok";
    case TESSEL_ERR_BAD_ARG: return "bad argument";
    case TESSEL_ERR_BAD_TRANS: return "bad transpose flag";
    case TESSEL_ERR_BAD_SIZE: return "bad size";
    case TESSEL_ERR_BAD_LD: return "bad leading dimension";
    case TESSEL_ERR_NULL: return "null pointer";
    case TESSEL_ERR_ALIAS: return "output overlaps an input";
    case TESSEL_ERR_NO_MEMORY: return "out of memory";
    case TESSEL_ERR_INTERNAL: return "internal error";
    case TESSEL_WARN_DB: return "tuning database unusable (analytic model used)";
    }
    return "unknown status";
}
