/*
 * Landlock, the second wall around the workload's files: a ruleset
 * applied by the workload to itself after its mounts are set, before
 * execve.  Reads of the read-only image (/usr, /etc), reads and writes
 * under its own writable directories only (/workspace, /home/sandbox,
 * /tmp, /var/tmp, /dev/shm), the device nodes of /dev, reads of /proc.
 * On ABI >= 6 abstract unix sockets and signals are scoped to the exec.
 * TCP is not restricted: see docs/isolation.md for why.  Raw syscalls,
 * no library.
 */
#ifndef VSB_LANDLOCK_H
#define VSB_LANDLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "vsb_sandbox.h"

/* What the ruleset handles at a given ABI (0: no Landlock). */
typedef struct {
    uint64_t  fs;
    uint64_t  net;
    uint64_t  scoped;
} vsb_landlock_handled_t;

/*
 * Asks the kernel for its Landlock ABI, once, at helper start; the
 * answer is kept for every exec.  Returns the ABI (0: the kernel lacks
 * Landlock or it is disabled; why is in msg).  Never fails the start.
 */
int vsb_landlock_init(char *msg, size_t msglen);

/* The ABI found by vsb_landlock_init(); 0 if none. */
int vsb_landlock_abi(void);

/* The access rights handled at abi (pure; unit-tested). */
void vsb_landlock_handled(int abi, vsb_landlock_handled_t *h);

/*
 * Builds the ruleset and restricts the calling process (the workload,
 * after its mounts and no_new_privs, before its seccomp filter).  A
 * no-op where the kernel has no Landlock; any failure where it has one
 * fails the exec.  Child side, allocation-free.
 */
int vsb_landlock_apply(const vsb_sandbox_t *sb, char *err, size_t errlen);

#endif
