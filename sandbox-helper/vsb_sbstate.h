/*
 * Each live sandbox's state file, state_dir/run/<id>.json: who owns it,
 * its profile, its lifetime, the helper run (epoch) that made it.
 * Written atomically (statefile.c) when the sandbox is made and when its
 * lifetime changes, removed once its end is on record (ended.c) and on
 * disk (durable.c).  A
 * helper that starts and finds one knows a crashed run left that
 * sandbox, and ends it on record (recover.c).  Environment values and
 * metadata are never written: they may hold secrets.
 */
#ifndef VSB_SBSTATE_H
#define VSB_SBSTATE_H

#include <jansson.h>
#include <stddef.h>

#include "vsb_sandbox.h"

int vsb_sbstate_init(char *err, size_t errlen);

/* Writes (or rewrites) sb's state file; -1 with err. */
int vsb_sbstate_write(vsb_sandbox_t *sb, char *err, size_t errlen);

/* Removes sb's state file, if it has one, once everything written before
 * (its ENDED record) is on disk (vsb_durable.h; logged when that fails). */
void vsb_sbstate_remove(vsb_sandbox_t *sb);

/* fn(id, rec) for each state file; rec is NULL when the file cannot be
 * read or is not a state file (id is then "" if its name is no id). */
typedef int (*vsb_sbstate_pt)(const char *id, json_t *rec, void *data);
int vsb_sbstate_each(vsb_sbstate_pt fn, void *data);

/* Removes the state file of id now; -1 with err. */
int vsb_sbstate_remove_id(const char *id, char *err, size_t errlen);

/* Queues the removal of id's state file after what is queued before it
 * (vsb_durable_unlink()); -1 when it cannot be queued. */
int vsb_sbstate_remove_later(const char *id);

#endif
