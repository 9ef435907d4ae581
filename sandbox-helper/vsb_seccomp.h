/*
 * The workload's seccomp filter: an allowlist (seccomp_table.c) built
 * with libseccomp, native architecture only (any other ABI kills the
 * process), plus a small hand-written filter for argument checks
 * libseccomp 2.5 cannot express.  Both BPF programs are generated once
 * in the helper and loaded with the raw seccomp(2) call in the child,
 * which allocates nothing between clone and execve.
 *
 * Two variants of the allowlist program:
 *
 *   the init's:      what is not allowed answers EPERM (reviewed as
 *                    dangerous) or ENOSYS (everything else);
 *   the workload's:  what is not allowed goes to a user-notification
 *                    listener; the exec's init holds it, answers EPERM or
 *                    ENOSYS the same way and records the numbers, which
 *                    the exec's result reports (supervise.c).  If nobody
 *                    listens, the kernel answers ENOSYS.
 */
#ifndef VSB_SECCOMP_H
#define VSB_SECCOMP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Distinct syscall numbers an exec's result names; more are counted in
 * total only. */
#define VSB_SC_REFUSED_MAX  16

typedef struct {
    int32_t   nr;
    int32_t   err;                  /* EPERM or ENOSYS */
    uint32_t  count;                /* saturates */
} vsb_sc_refusal_t;

typedef struct {
    uint32_t          total;        /* every refusal answered, saturates */
    uint32_t          n;            /* entries used in sc[] */
    vsb_sc_refusal_t  sc[VSB_SC_REFUSED_MAX];
} vsb_sc_refused_t;

/* Builds both programs and the EPERM map (once; later calls are no-ops).
 * Helper side. */
int vsb_seccomp_prepare(char *err, size_t errlen);

/*
 * Loads the filters into the calling process.  Requires no_new_privs (or
 * CAP_SYS_ADMIN).  Child side, allocation-free.
 *
 * notify_sock -1: the init's variant.  Otherwise the workload's: the
 * listener is sent over notify_sock (a unix socket, SCM_RIGHTS) and both
 * descriptors are closed before this returns.
 */
int vsb_seccomp_apply(int notify_sock, char *err, size_t errlen);

/* The errno the filter's supervisor answers for syscall nr. */
int vsb_seccomp_refusal_errno(long nr);

/* Records one refusal of nr in r (bounded; never fails). */
void vsb_seccomp_refused_add(vsb_sc_refused_t *r, long nr, int err);

/* The exec result's "refused_syscalls": [{nr, name, errno, count}, ...]
 * (name null where libseccomp cannot name the number).  Defensive: r
 * comes from inside the sandbox. */
json_t *vsb_seccomp_refused_json(const vsb_sc_refused_t *r);

#endif
