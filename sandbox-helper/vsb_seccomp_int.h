/*
 * Inside the seccomp layer: the reviewed syscall lists (seccomp_table.c)
 * shared by the filter builder (seccomp.c) and the supervisor that
 * answers what the filter hands it (seccomp_notify.c).
 */
#ifndef VSB_SECCOMP_INT_H
#define VSB_SECCOMP_INT_H

#include <stddef.h>
#include <stdint.h>

/* Syscall numbers below this are looked up in a bitmap; anything above
 * is unknown by construction (x86_64 and aarch64 end below 500). */
#define VSB_SC_NR_MAX  1024

/* Bytes of the supervisor's notification and response buffers; the
 * helper checks at start that this kernel's structures fit. */
#define VSB_SC_NOTIF_BUF  512

/* Allowed outright: build and test tooling needs them, and with no
 * capabilities in a user namespace they reach nothing beyond the
 * sandbox.  Argument checks for a few (clone, socket, ...) live in the
 * hand-written filter of seccomp.c.  NULL-terminated. */
extern const char *const  vsb_sc_allowed[];

/* Refused with EPERM: known kernel attack surface or host-wide state.
 * NULL-terminated. */
extern const char *const  vsb_sc_refused_eperm[];

/* Refused with ENOSYS in the filter itself, never reported (clone3: libc
 * calls it for every thread and falls back to clone). */
extern const char *const  vsb_sc_refused_enosys[];

/* EPERM set as a bitmap by number (native ABI), built by
 * vsb_seccomp_prepare(); read by the supervisor in the sandbox. */
extern uint64_t  vsb_sc_eperm_map[VSB_SC_NR_MAX / 64];

#endif
