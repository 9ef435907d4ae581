/* Logging to stderr: one line per event, level-filtered. */
#ifndef EG_LOG_H
#define EG_LOG_H

#define EG_LOG_ERROR  0
#define EG_LOG_INFO   1
#define EG_LOG_DEBUG  2

void eg_log_set_level(int level);
void eg_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
