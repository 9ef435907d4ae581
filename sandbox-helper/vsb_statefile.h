/*
 * Small records the helper keeps on disk under state_dir (one file per
 * record, at most VSB_STATEFILE_MAX bytes): each live sandbox's state
 * (state_dir/run, sbstate.c) and each ended sandbox's ENDED record
 * (state_dir/ended, ended.c).  A write never leaves a torn record to a
 * reader: a temporary file is written and renamed over the record.  It
 * is complete in the page cache when the write returns (a helper crash
 * loses nothing); durable.c's child fsyncs it and its directory for a
 * host crash.  A removal is verified (the name is gone) and not fsynced:
 * statefile.c says why that is safe.
 */
#ifndef VSB_STATEFILE_H
#define VSB_STATEFILE_H

#include <stddef.h>
#include <sys/types.h>

#define VSB_STATEFILE_MAX  4096

/* state_dir/<name>, a root-only directory (0700), made if missing; its
 * path in out. */
int vsb_statefile_dir(const char *name, char *out, size_t len, char *err,
    size_t errlen);

/* dir/<name> holds exactly data afterwards, or -1 with err; on disk
 * soon after (vsb_durable.h). */
int vsb_statefile_write(const char *dir, const char *name, const char *data,
    size_t len, char *err, size_t errlen);

/* dir/<name> is gone (it may not have existed), or -1 with err. */
int vsb_statefile_remove(const char *dir, const char *name, char *err,
    size_t errlen);

/* The record, NUL-terminated, in buf (size > VSB_STATEFILE_MAX); its
 * length, or -1 with err (missing, not a regular file, too large). */
ssize_t vsb_statefile_read(const char *dir, const char *name, char *buf,
    size_t size, char *err, size_t errlen);

/* fn for each record name in dir ("<something>.json"), in no order;
 * leftover temporary files of an interrupted write are removed.  Stops
 * at the first fn that returns -1.  -1 if dir cannot be read. */
int vsb_statefile_each(const char *dir,
    int (*fn)(const char *name, void *data), void *data);

#endif
