/*
 * The workload's seccomp filter (libseccomp): default allow, EPERM for
 * kernel attack surface, native architecture only (any other ABI kills
 * the process).  The BPF program is generated once in the helper and
 * loaded with the raw seccomp(2) call in the child, which allocates
 * nothing between clone and execve.
 */
#ifndef VSB_SECCOMP_H
#define VSB_SECCOMP_H

#include <stddef.h>

/* Builds the filter (once; later calls are no-ops).  Helper side. */
int vsb_seccomp_prepare(char *err, size_t errlen);

/* Loads the prepared filter into the calling process.  Requires
 * no_new_privs (or CAP_SYS_ADMIN).  Child side, allocation-free. */
int vsb_seccomp_apply(char *err, size_t errlen);

#endif
