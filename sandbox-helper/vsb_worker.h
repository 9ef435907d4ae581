/*
 * Slow file work off the event loop: a snapshot's copy, a change set's
 * hashing.  vsb_worker_start() forks a short-lived child from the
 * single-threaded helper (libc is safe in it); the child keeps only two
 * memory files, runs fn, which writes its reply header (one JSON object)
 * to the first and its payload to the second, and exits.  The helper
 * watches the child's pidfd and then calls done with what the child
 * wrote, bounded: the header at most VSB_MAX_JSON bytes, the payload at
 * most max_payload.  A child that dies, or writes more, ends as an error.
 */
#ifndef VSB_WORKER_H
#define VSB_WORKER_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct vsb_worker_s  vsb_worker_t;

/* In the child: 0 with the reply header written to hfd (and a payload to
 * pfd), or -1 with the error reply header written to hfd.  Its exit
 * status is fn's. */
typedef int (*vsb_worker_fn_pt)(void *arg, int hfd, int pfd);

/* In the helper, from the loop, exactly once: header is the parsed JSON
 * object the child wrote (NULL with why filled: it died or wrote
 * garbage), payload its bytes (owned by done from now on; NULL when
 * none).  */
typedef void (*vsb_worker_done_pt)(void *data, json_t *header,
    unsigned char *payload, size_t payload_len, const char *why);

/* NULL with err filled when no child could be started (nothing is called
 * then). */
vsb_worker_t *vsb_worker_start(const char *name, vsb_worker_fn_pt fn,
    void *arg, size_t max_payload, vsb_worker_done_pt done, void *data,
    char *err, size_t errlen);

/* The helper no longer wants the result (its sandbox is ending): kills
 * the child and waits for it to be gone; done is called before this
 * returns, with why "cancelled" (w is freed then). */
void vsb_worker_cancel(vsb_worker_t *w);

/* In the child: writes the JSON object (compact) to hfd. */
int vsb_worker_json(int hfd, json_t *obj);

#endif
