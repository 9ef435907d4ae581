/*
 * The metrics store: the table of series in the shared zone, the
 * families it keeps, and their text exposition format.  Pure: no request,
 * no event, no shared memory of its own (it is handed the table), so the
 * unit tests drive it as it is.  Contract: ngx_http_veto_sandbox_metrics.h.
 */

#include "ngx_http_veto_sandbox_metrics.h"


#define NGX_HTTP_VSB_M_COUNTER      0
#define NGX_HTTP_VSB_M_HISTOGRAM    1

/* how long a lookup waits for another worker to finish writing the
 * labels of a slot it just claimed (a few stores) before giving up */
#define NGX_HTTP_VSB_M_SPIN         4096


typedef struct {
    const char                  *name;
    const char                  *help;
    ngx_uint_t                   type;
    const uint64_t              *bounds;   /* histograms: microseconds */
} ngx_http_veto_sandbox_family_t;


/* helper requests: 1 ms .. 30 s */
static const uint64_t  ngx_http_veto_sandbox_helper_bounds[
    NGX_HTTP_VSB_M_BUCKETS] =
{
    1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
    1000000, 2500000, 5000000, 10000000, 30000000
};

/* execs: 10 ms .. 5 min */
static const uint64_t  ngx_http_veto_sandbox_exec_bounds[
    NGX_HTTP_VSB_M_BUCKETS] =
{
    10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000,
    5000000, 10000000, 30000000, 60000000, 120000000, 300000000
};


static ngx_http_veto_sandbox_family_t
    ngx_http_veto_sandbox_families[NGX_HTTP_VSB_M_NFAMILIES] =
{
    { "veto_sandbox_requests_total",
      "API requests by op table row (route; an MCP tool call is its REST "
      "twin's, mcp: other MCP messages; unmatched: no row) and "
      "decision ($veto_decision; none: empty).",
      NGX_HTTP_VSB_M_COUNTER, NULL },

    { "veto_sandbox_approvals_total",
      "Approvals that reached a state: created, approved (threshold met), "
      "denied, expired, consumed.",
      NGX_HTTP_VSB_M_COUNTER, NULL },

    { "veto_sandbox_helper_request_duration_seconds",
      "Time from sending a request to the sandbox helper to its reply or "
      "failure, by helper op.",
      NGX_HTTP_VSB_M_HISTOGRAM, ngx_http_veto_sandbox_helper_bounds },

    { "veto_sandbox_helper_errors_total",
      "Helper requests that failed: connect, send, timeout, "
      "protocol, internal (the gateway's side), or the helper's own error "
      "name (termination_failed, io_error, ...).",
      NGX_HTTP_VSB_M_COUNTER, NULL },

    { "veto_sandbox_exec_duration_seconds",
      "Wall-clock time of the execs the helper ran, as it measured them.",
      NGX_HTTP_VSB_M_HISTOGRAM, ngx_http_veto_sandbox_exec_bounds },

    { "veto_sandbox_egress_attempts_total",
      "Network attempts of sandboxes listed in exec results, by outcome "
      "(allowed, refused, error; unlisted: dropped from a full list).",
      NGX_HTTP_VSB_M_COUNTER, NULL },

    { "veto_sandbox_redis_errors_total",
      "Redis commands that failed by kind (unavailable, connection_lost, "
      "timeout, error_reply), and reconnect attempts.",
      NGX_HTTP_VSB_M_COUNTER, NULL },

    { "veto_sandbox_jwt_cache_lookups_total",
      "Lookups in the verified-token cache by result (hit, miss).",
      NGX_HTTP_VSB_M_COUNTER, NULL }
};


/* the series a scrape shows from the start: family, label text */
static struct {
    ngx_uint_t    family;
    const char   *labels;
} ngx_http_veto_sandbox_initial[] = {
    { NGX_HTTP_VSB_M_APPROVALS, "state=\"created\"" },
    { NGX_HTTP_VSB_M_APPROVALS, "state=\"approved\"" },
    { NGX_HTTP_VSB_M_APPROVALS, "state=\"denied\"" },
    { NGX_HTTP_VSB_M_APPROVALS, "state=\"expired\"" },
    { NGX_HTTP_VSB_M_APPROVALS, "state=\"consumed\"" },
    { NGX_HTTP_VSB_M_HELPER_ERRORS, "kind=\"connect\"" },
    { NGX_HTTP_VSB_M_HELPER_ERRORS, "kind=\"send\"" },
    { NGX_HTTP_VSB_M_HELPER_ERRORS, "kind=\"timeout\"" },
    { NGX_HTTP_VSB_M_HELPER_ERRORS, "kind=\"protocol\"" },
    { NGX_HTTP_VSB_M_HELPER_ERRORS, "kind=\"termination_failed\"" },
    { NGX_HTTP_VSB_M_EXEC_DURATION, "" },
    { NGX_HTTP_VSB_M_EGRESS, "outcome=\"allowed\"" },
    { NGX_HTTP_VSB_M_EGRESS, "outcome=\"refused\"" },
    { NGX_HTTP_VSB_M_EGRESS, "outcome=\"error\"" },
    { NGX_HTTP_VSB_M_EGRESS, "outcome=\"unlisted\"" },
    { NGX_HTTP_VSB_M_REDIS_ERRORS, "kind=\"unavailable\"" },
    { NGX_HTTP_VSB_M_REDIS_ERRORS, "kind=\"connection_lost\"" },
    { NGX_HTTP_VSB_M_REDIS_ERRORS, "kind=\"timeout\"" },
    { NGX_HTTP_VSB_M_REDIS_ERRORS, "kind=\"error_reply\"" },
    { NGX_HTTP_VSB_M_REDIS_ERRORS, "kind=\"reconnect\"" },
    { NGX_HTTP_VSB_M_JWT_CACHE, "result=\"hit\"" },
    { NGX_HTTP_VSB_M_JWT_CACHE, "result=\"miss\"" },
    { 0, NULL }
};


static ngx_http_veto_sandbox_series_t *ngx_http_veto_sandbox_series(
    ngx_http_veto_sandbox_metrics_sh_t *sh, ngx_uint_t family,
    u_char *labels, size_t len);


void
ngx_http_veto_sandbox_metrics_reset(ngx_http_veto_sandbox_metrics_sh_t *sh)
{
    ngx_uint_t  i;

    ngx_memzero(sh, sizeof(ngx_http_veto_sandbox_metrics_sh_t));

    sh->magic = NGX_HTTP_VSB_M_MAGIC;

    for (i = 0; ngx_http_veto_sandbox_initial[i].labels; i++) {
        (void) ngx_http_veto_sandbox_series(sh,
                   ngx_http_veto_sandbox_initial[i].family,
                   (u_char *) ngx_http_veto_sandbox_initial[i].labels,
                   ngx_strlen(ngx_http_veto_sandbox_initial[i].labels));
    }
}


/* FNV-1a of the family and the labels */
static uint32_t
ngx_http_veto_sandbox_series_hash(ngx_uint_t family, u_char *p, size_t len)
{
    uint32_t  h;

    h = 2166136261u ^ (uint32_t) family;
    h *= 16777619u;

    while (len--) {
        h ^= *p++;
        h *= 16777619u;
    }

    return h;
}


/*
 * The series family{labels}, made on first use; NULL when the table is
 * full or the labels too long.  A claimed slot is written by the worker
 * that claimed it, then marked ready; another worker asking for the same
 * key waits for that (a few stores), so one series never takes two slots.
 */
static ngx_http_veto_sandbox_series_t *
ngx_http_veto_sandbox_series(ngx_http_veto_sandbox_metrics_sh_t *sh,
    ngx_uint_t family, u_char *labels, size_t len)
{
    uint32_t                         h;
    ngx_uint_t                       i, idx, spin;
    ngx_atomic_uint_t                key, k;
    ngx_http_veto_sandbox_series_t  *s;

    if (len > NGX_HTTP_VSB_M_LABELS || family >= NGX_HTTP_VSB_M_NFAMILIES) {
        return NULL;
    }

    h = ngx_http_veto_sandbox_series_hash(family, labels, len);

    /* never 0, which marks a free slot */
    key = (((ngx_atomic_uint_t) h << 4) | family) + 1;

    idx = h % NGX_HTTP_VSB_M_SERIES;

    for (i = 0; i < NGX_HTTP_VSB_M_SERIES;
         i++, idx = (idx + 1) % NGX_HTTP_VSB_M_SERIES)
    {
        s = &sh->series[idx];
        k = (ngx_atomic_uint_t) s->key;

        if (k == 0) {
            if (ngx_atomic_cmp_set(&s->key, 0, key)) {
                s->family = family;
                s->labels_len = len;

                if (len) {
                    ngx_memcpy(s->labels, labels, len);
                }

                ngx_memory_barrier();
                s->ready = 1;

                return s;
            }

            k = (ngx_atomic_uint_t) s->key;
        }

        if (k != key) {
            continue;
        }

        for (spin = 0; !s->ready; spin++) {
            if (spin == NGX_HTTP_VSB_M_SPIN) {
                /* its writer died between the two stores */
                return NULL;
            }

            ngx_cpu_pause();
        }

        ngx_memory_barrier();

        /* no labels may come as NULL: memcmp(p, NULL, 0) is UB */
        if (s->family == family && s->labels_len == len
            && (len == 0 || ngx_memcmp(s->labels, labels, len) == 0))
        {
            return s;
        }
    }

    return NULL;
}


void
ngx_http_veto_sandbox_metrics_add(ngx_http_veto_sandbox_metrics_sh_t *sh,
    ngx_uint_t family, u_char *labels, size_t len, ngx_atomic_uint_t n)
{
    ngx_http_veto_sandbox_series_t  *s;

    s = ngx_http_veto_sandbox_series(sh, family, labels, len);
    if (s == NULL) {
        (void) ngx_atomic_fetch_add(&sh->dropped, 1);
        return;
    }

    (void) ngx_atomic_fetch_add(&s->v[0], n);
}


void
ngx_http_veto_sandbox_metrics_observe(ngx_http_veto_sandbox_metrics_sh_t *sh,
    ngx_uint_t family, u_char *labels, size_t len, uint64_t usec)
{
    ngx_uint_t                       b;
    const uint64_t                  *bounds;
    ngx_http_veto_sandbox_series_t  *s;

    bounds = family < NGX_HTTP_VSB_M_NFAMILIES
             ? ngx_http_veto_sandbox_families[family].bounds : NULL;

    s = bounds ? ngx_http_veto_sandbox_series(sh, family, labels, len)
               : NULL;
    if (s == NULL) {
        (void) ngx_atomic_fetch_add(&sh->dropped, 1);
        return;
    }

    /* "le": the first bucket whose bound is not below the value */
    for (b = 0; b < NGX_HTTP_VSB_M_BUCKETS && usec > bounds[b]; b++) {
        /* void */
    }

    (void) ngx_atomic_fetch_add(&s->v[b], 1);
    (void) ngx_atomic_fetch_add(&s->v[NGX_HTTP_VSB_M_BUCKETS + 1],
                                (ngx_atomic_uint_t) usec);
}


u_char *
ngx_http_veto_sandbox_metrics_label(u_char *p, u_char *start, u_char *last,
    const char *name, u_char *value, size_t len)
{
    size_t   n;
    u_char  *v;

    n = ngx_strlen(name);

    if (p == NULL || (size_t) (last - p) < n + 4) {
        return NULL;
    }

    if (p != start) {
        *p++ = ',';
    }

    p = ngx_cpymem(p, name, n);
    *p++ = '=';
    *p++ = '"';

    for (v = value; v < value + len; v++) {

        if (last - p < 3) {
            return NULL;
        }

        switch (*v) {

        case '\\':
        case '"':
            *p++ = '\\';
            *p++ = *v;
            break;

        case '\n':
            *p++ = '\\';
            *p++ = 'n';
            break;

        default:
            *p++ = *v;
        }
    }

    if (p == last) {
        return NULL;
    }

    *p++ = '"';

    return p;
}


u_char *
ngx_http_veto_sandbox_metrics_seconds(u_char *p, uint64_t usec)
{
    u_char    frac[8], *f;
    uint64_t  r;

    p = ngx_sprintf(p, "%uL", usec / 1000000);

    r = usec % 1000000;
    if (r == 0) {
        return p;
    }

    f = ngx_sprintf(frac, "%06uL", r);

    while (f[-1] == '0') {
        f--;
    }

    *p++ = '.';

    return ngx_cpymem(p, frac, f - frac);
}


#define NGX_HTTP_VSB_M_DROPPED_TEXT                                           \
    "# HELP veto_sandbox_metrics_series_dropped_total Counts and "            \
    "observations lost: the metrics table was full.\n"                       \
    "# TYPE veto_sandbox_metrics_series_dropped_total counter\n"              \
    "veto_sandbox_metrics_series_dropped_total"


/* a line's worst case: name and suffix, labels escaped, le, a number */
#define NGX_HTTP_VSB_M_LINE                                                   \
    (64 + sizeof("_bucket{") + NGX_HTTP_VSB_M_LABELS                          \
     + sizeof(",le=\"\"} ") + 32 + NGX_INT64_LEN + 1)


size_t
ngx_http_veto_sandbox_metrics_size(ngx_http_veto_sandbox_metrics_sh_t *sh)
{
    size_t                           size;
    ngx_uint_t                       i, f;
    ngx_http_veto_sandbox_series_t  *s;

    size = 0;

    for (f = 0; f < NGX_HTTP_VSB_M_NFAMILIES; f++) {
        size += sizeof("# HELP  \n# TYPE  histogram\n") - 1
                + 2 * ngx_strlen(ngx_http_veto_sandbox_families[f].name)
                + ngx_strlen(ngx_http_veto_sandbox_families[f].help);
    }

    size += sizeof(NGX_HTTP_VSB_M_DROPPED_TEXT) + 2 + NGX_INT64_LEN;

    for (i = 0; i < NGX_HTTP_VSB_M_SERIES; i++) {
        s = &sh->series[i];

        if (!s->ready || s->family >= NGX_HTTP_VSB_M_NFAMILIES) {
            continue;
        }

        size += ngx_http_veto_sandbox_families[s->family].bounds
                ? (NGX_HTTP_VSB_M_BUCKETS + 3) * NGX_HTTP_VSB_M_LINE
                : NGX_HTTP_VSB_M_LINE;
    }

    return size;
}


/* name{labels} or name{labels,le="..."}, or bare name */
static u_char *
ngx_http_veto_sandbox_series_name(u_char *p, const char *name,
    const char *suffix, ngx_http_veto_sandbox_series_t *s, u_char *le,
    size_t le_len)
{
    p = ngx_sprintf(p, "%s%s", name, suffix);

    if (s->labels_len == 0 && le_len == 0) {
        return p;
    }

    *p++ = '{';
    p = ngx_cpymem(p, s->labels, s->labels_len);

    if (le_len) {
        p = ngx_sprintf(p, "%sle=\"", s->labels_len ? "," : "");
        p = ngx_cpymem(p, le, le_len);
        *p++ = '"';
    }

    *p++ = '}';

    return p;
}


static u_char *
ngx_http_veto_sandbox_render_histogram(u_char *p,
    ngx_http_veto_sandbox_family_t *fam, ngx_http_veto_sandbox_series_t *s)
{
    u_char             le[32], *e;
    ngx_uint_t         b;
    ngx_atomic_uint_t  cum;

    cum = 0;

    /* the count is the buckets' sum as read here, so that "+Inf" and
     * _count agree whatever is observed meanwhile */
    for (b = 0; b <= NGX_HTTP_VSB_M_BUCKETS; b++) {
        cum += (ngx_atomic_uint_t) s->v[b];

        if (b < NGX_HTTP_VSB_M_BUCKETS) {
            e = ngx_http_veto_sandbox_metrics_seconds(le, fam->bounds[b]);

        } else {
            e = ngx_cpymem(le, "+Inf", 4);
        }

        p = ngx_http_veto_sandbox_series_name(p, fam->name, "_bucket", s, le,
                                              e - le);
        p = ngx_sprintf(p, " %uA\n", cum);
    }

    p = ngx_http_veto_sandbox_series_name(p, fam->name, "_sum", s, NULL, 0);
    *p++ = ' ';
    p = ngx_http_veto_sandbox_metrics_seconds(p,
                         (uint64_t) s->v[NGX_HTTP_VSB_M_BUCKETS + 1]);
    *p++ = '\n';

    p = ngx_http_veto_sandbox_series_name(p, fam->name, "_count", s, NULL, 0);

    return ngx_sprintf(p, " %uA\n", cum);
}


u_char *
ngx_http_veto_sandbox_metrics_render(ngx_http_veto_sandbox_metrics_sh_t *sh,
    u_char *p)
{
    ngx_uint_t                       i, f;
    ngx_http_veto_sandbox_family_t  *fam;
    ngx_http_veto_sandbox_series_t  *s;

    for (f = 0; f < NGX_HTTP_VSB_M_NFAMILIES; f++) {
        fam = &ngx_http_veto_sandbox_families[f];

        p = ngx_sprintf(p, "# HELP %s %s\n# TYPE %s %s\n", fam->name,
                        fam->help, fam->name,
                        fam->bounds ? "histogram" : "counter");

        for (i = 0; i < NGX_HTTP_VSB_M_SERIES; i++) {
            s = &sh->series[i];

            if (!s->ready || s->family != f) {
                continue;
            }

            ngx_memory_barrier();

            if (fam->bounds) {
                p = ngx_http_veto_sandbox_render_histogram(p, fam, s);
                continue;
            }

            p = ngx_http_veto_sandbox_series_name(p, fam->name, "", s, NULL,
                                                  0);
            p = ngx_sprintf(p, " %uA\n", (ngx_atomic_uint_t) s->v[0]);
        }
    }

    p = ngx_cpymem(p, NGX_HTTP_VSB_M_DROPPED_TEXT,
                   sizeof(NGX_HTTP_VSB_M_DROPPED_TEXT) - 1);

    return ngx_sprintf(p, " %uA\n", (ngx_atomic_uint_t) sh->dropped);
}
