/*
 * The control channel's request fields (control_fields.c): each returns
 * NULL when the field is as it must be, else the error reply to send
 * ({"ok": false, "error", "detail", "field"}), or NULL with no memory
 * for eg_ctl_err() and eg_ctl_ok() themselves.
 */
#ifndef EG_CONTROL_FIELDS_H
#define EG_CONTROL_FIELDS_H

#include <jansson.h>
#include <stddef.h>

#include "eg_allow.h"
#include "eg_cred.h"
#include "eg_limits.h"

json_t *eg_ctl_err(const char *error, const char *field, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));
json_t *eg_ctl_ok(const char *op);
/* Every key of req must be in allowed (NULL-terminated). */
json_t *eg_ctl_check_fields(json_t *req, const char *const *allowed);
json_t *eg_ctl_sandbox_id(json_t *req, const char *field, const char **out);
json_t *eg_ctl_tenant(json_t *req, const char **out);
/* *out: calloc()ed, the caller's to free */
json_t *eg_ctl_entries(json_t *req, const char *field, int required,
    eg_allow_entry_t **out, size_t *nout);
/* *l: the proxy's ceilings, less what "limits" asks */
json_t *eg_ctl_limits(json_t *req, eg_limits_t *l);
json_t *eg_ctl_limits_json(const eg_limits_t *l);
/* "credentials": [{name, placeholder}...], absent meaning none: each a
 * credential the proxy loaded, or an agent's own secret ({name,
 * placeholder, value, host, template, header?, path?}: a name the
 * operator's bindings do not hold), each name and placeholder distinct.
 * *n 0 .. EG_CRED_PER_SANDBOX.  The agents' secrets not among own[0 ..
 * *nown) are appended there (own NULL: a check only, nothing kept). */
json_t *eg_ctl_credentials(json_t *req, eg_cred_t **own, size_t *nown,
    eg_cred_att_t *out, size_t *n);

#endif
