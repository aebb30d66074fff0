/*
 * buffers.c - a small cache of aligned scratch buffers. A call acquires one
 * buffer big enough for all its packed panels and gives it back when done;
 * the next call of a similar size then reuses memory whose pages are
 * already mapped. A few buffers are kept so that concurrent callers each
 * find one. Each buffer's size sits in a 64-byte header just before it.
 */
#include <pthread.h>
#include <stdlib.h>

#include "runtime/runtime.h"

enum { KEPT_BUFFERS = 8, HEADER = 64 };

struct rt_buffers {
    pthread_mutex_t lock;
    void *kept[KEPT_BUFFERS]; /* header addresses */
    int nkept;
};

static size_t *size_of(void *header)
{
    return header;
}

rt_buffers *rt_buffers_create(void)
{
    rt_buffers *c = calloc(1, sizeof *c);
    if (c)
        pthread_mutex_init(&c->lock, NULL);
    return c;
}

void rt_buffers_destroy(rt_buffers *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nkept; i++)
        free(c->kept[i]);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

void *rt_buffer_acquire(rt_buffers *c, size_t bytes)
{
    pthread_mutex_lock(&c->lock);
    int best = -1;
    for (int i = 0; i < c->nkept; i++)
        if (*size_of(c->kept[i]) >= bytes &&
            (best < 0 || *size_of(c->kept[i]) < *size_of(c->kept[best])))
            best = i;
    void *header = NULL;
    if (best >= 0) {
        header = c->kept[best];
        c->kept[best] = c->kept[--c->nkept];
    }
    pthread_mutex_unlock(&c->lock);

    if (!header) {
        size_t rounded = (bytes + 4095) & ~(size_t)4095;
        header = aligned_alloc(64, rounded + HEADER);
        if (!header)
            return NULL;
        *size_of(header) = rounded;
    }
    return (char *)header + HEADER;
}

void rt_buffer_release(rt_buffers *c, void *buffer)
{
    if (!buffer)
        return;
    void *header = (char *)buffer - HEADER;
    /* When the cache is full, the smallest buffer makes way: the sizes
     * callers need grow with their shapes. */
    void *evicted = header;
    pthread_mutex_lock(&c->lock);
    if (c->nkept < KEPT_BUFFERS) {
        c->kept[c->nkept++] = header;
        evicted = NULL;
    } else {
        for (int i = 0; i < c->nkept; i++)
            if (*size_of(c->kept[i]) < *size_of(evicted)) {
                void *smaller = c->kept[i];
                c->kept[i] = evicted;
                evicted = smaller;
            }
    }
    pthread_mutex_unlock(&c->lock);
    free(evicted);
}
