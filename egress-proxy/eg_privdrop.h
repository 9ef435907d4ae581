/*
 * Privileges: the proxy never runs as root.  Started as root it drops
 * to the configured user (no supplementary groups, no capabilities in
 * any set, bounding set emptied, no_new_privs, not dumpable); started
 * as another user it makes sure it holds no capability.
 */
#ifndef EG_PRIVDROP_H
#define EG_PRIVDROP_H

#include <stddef.h>

int eg_privdrop(const char *user, char *err, size_t errlen);

#endif
