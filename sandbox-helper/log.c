/*
 * Helper logging: one line per event on stderr ("level: message"), so
 * systemd's journal or a test harness can capture it unchanged.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vsb_log.h"

int  vsb_log_level = VSB_LOG_INFO;

static const char  *vsb_log_names[] = { "error", "warn", "info", "debug" };


static void
vsb_log_v(int level, const char *err, const char *fmt, va_list ap)
{
    char  line[2048];
    int   n;

    if (level > vsb_log_level) {
        return;
    }

    if (level < VSB_LOG_ERR || level > VSB_LOG_DEBUG) {
        level = VSB_LOG_ERR;
    }

    n = vsnprintf(line, sizeof(line), fmt, ap);
    if (n < 0) {
        return;
    }

    /* One fprintf per line keeps lines whole if stderr is shared. */
    if (err != NULL) {
        fprintf(stderr, "sandbox-helper: %s: %s: %s\n", vsb_log_names[level],
                line, err);
    } else {
        fprintf(stderr, "sandbox-helper: %s: %s\n", vsb_log_names[level],
                line);
    }
}


void
vsb_log(int level, const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    vsb_log_v(level, NULL, fmt, ap);
    va_end(ap);
}


void
vsb_log_errno(int level, const char *fmt, ...)
{
    va_list  ap;
    int      saved = errno;

    va_start(ap, fmt);
    vsb_log_v(level, strerror(saved), fmt, ap);
    va_end(ap);
    errno = saved;
}
