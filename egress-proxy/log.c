/* Logging: stderr, one line each, with the monotonic-free wall time. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "eg_log.h"

static int  eg_log_level = EG_LOG_INFO;


void
eg_log_set_level(int level)
{
    eg_log_level = level;
}


void
eg_log(int level, const char *fmt, ...)
{
    va_list          ap;
    struct timespec  ts;
    char             buf[1024];

    if (level > eg_log_level) {
        return;
    }

    clock_gettime(CLOCK_REALTIME, &ts);
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%lld.%03ld egress-proxy %s: %s\n", (long long) ts.tv_sec,
            ts.tv_nsec / 1000000,
            level == EG_LOG_ERROR ? "error"
            : level == EG_LOG_INFO ? "info" : "debug", buf);
}
