/*
 * Network egress internals shared by egress.c (sandboxes and the proxy's
 * state) and egress_records.c (attempt records and the exec windows).
 */
#ifndef VSB_EGRESS_INT_H
#define VSB_EGRESS_INT_H

#include <jansson.h>
#include <stdint.h>

#include "vsb_egress.h"
#include "vsb_egress_link.h"
#include "vsb_loop.h"

#define VSB_EGRESS_REQ_MS        5000     /* a proxy request's deadline */
#define VSB_EGRESS_SB_REC_BYTES  (256 * 1024)  /* records kept per sandbox */

typedef struct vsb_egress_rec_s  vsb_egress_rec_t;
typedef struct vsb_egress_sb_s   vsb_egress_sb_t;

struct vsb_egress_rec_s {
    json_t             *o;             /* sanitized attempt */
    size_t              bytes;         /* its serialized size */
    uint64_t            start_ms;      /* unix ms */
    vsb_egress_rec_t   *next;
};

struct vsb_egress_win_s {
    vsb_egress_sb_t    *es;
    uint64_t            start_ms;      /* unix ms */
    uint64_t            end_ms;        /* 0 while the exec runs */
    unsigned            settles;       /* barriers repeated */
    unsigned            lost:1;        /* records dropped meanwhile */
    unsigned            unsure:1;      /* no barrier answered */
    vsb_timer_t         timer;
    vsb_egress_exec_pt  cb;
    void               *data;
    vsb_egress_win_t   *next;
};

struct vsb_egress_sb_s {
    vsb_sandbox_t      *sb;
    json_t             *allow;         /* array of entry strings */
    json_t             *ask;           /* array, maybe empty */
    json_t             *creds;         /* attachments (vsb_egress_cred.h) */
    char              **env;           /* the workload's, with creds */
    size_t              bytes;         /* of every entry together */
    vsb_egress_socks_t  socks;         /* the helper's copies */

    unsigned            adding:1;      /* an add is in flight */
    unsigned            served:1;      /* the proxy has it */
    unsigned            removing:1;
    unsigned            updating:1;

    vsb_egress_done_pt  done;          /* the create's add or the remove */
    void               *done_data;
    vsb_egress_done_pt  udone;         /* the update */
    void               *udone_data;
    const char         *done_error;
    char                done_detail[256];
    vsb_timer_t         done_timer;    /* done from the loop */
    json_t             *pending;       /* update: the list being sent */
    json_t             *pending_creds; /* update: the attachments sent */

    vsb_egress_rec_t   *rhead, *rtail;
    size_t              rbytes;
    uint64_t            rdropped;      /* not attributed to an exec */
    vsb_egress_win_t   *wins;

    vsb_egress_sb_t    *next;
};

/* egress.c */
vsb_egress_sb_t *vsb_egress_find(const char *id);
vsb_egress_sb_t *vsb_egress_first(void);

/* egress_records.c */
void vsb_egress_on_event(json_t *ev);
/* Credential headers added, placeholders refused: from the records. */
void vsb_egress_cred_counts(uint64_t *injections, uint64_t *refused);
void vsb_egress_records_free(vsb_egress_sb_t *es);

#endif
