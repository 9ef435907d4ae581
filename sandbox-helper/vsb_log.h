/* Logging for the helper: one line per event on stderr, "level: message". */
#ifndef VSB_LOG_H
#define VSB_LOG_H

#define VSB_LOG_ERR    0
#define VSB_LOG_WARN   1
#define VSB_LOG_INFO   2
#define VSB_LOG_DEBUG  3

extern int vsb_log_level;

void vsb_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Like vsb_log(), appending ": " and strerror(errno). */
void vsb_log_errno(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
