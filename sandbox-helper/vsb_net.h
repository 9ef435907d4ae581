/*
 * Networking inside a sandbox's network namespace (netns.c calls it
 * there, at create).  Mode "none": only loopback, brought up so that
 * workloads can talk to themselves (127.0.0.1 and ::1 are the sandbox's
 * own, not the host's).
 */
#ifndef VSB_NET_H
#define VSB_NET_H

#include <stddef.h>

int vsb_net_loopback_up(char *err, size_t errlen);

#endif
