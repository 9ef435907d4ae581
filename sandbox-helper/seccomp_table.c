/*
 * The reviewed syscall lists of the workload filter.
 *
 * The filter is an allowlist: a syscall is allowed only if it is named
 * below, so a syscall added by a later kernel (or one the installed
 * libseccomp cannot name) is refused until someone reviews it and adds
 * it here.  Sources: what compilers, interpreters, package managers, git,
 * make and test runners call (t/helper/tooling.t runs them under this filter
 * and reports what it refused), and Docker's default profile, minus what
 * this project refuses on purpose (listed with reasons in
 * vsb_sc_refused_eperm and docs/isolation.md).
 *
 * Names that do not exist on the native architecture (open on aarch64,
 * arch_prctl outside x86) are skipped by the builder.
 */
#include <stddef.h>

#include "vsb_seccomp_int.h"


const char *const  vsb_sc_allowed[] = {
    /* file I/O on descriptors */
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv",
    "pwritev", "preadv2", "pwritev2", "lseek", "close", "close_range",
    "dup", "dup2", "dup3", "pipe", "pipe2", "fcntl", "flock", "fsync",
    "fdatasync", "sync", "syncfs", "sync_file_range", "fadvise64",
    "readahead", "fallocate", "ftruncate", "sendfile", "splice", "tee",
    "vmsplice", "copy_file_range",

    /* paths: open, inspect, create, rename, remove, permissions, times */
    "open", "openat", "openat2", "creat", "truncate",
    "stat", "fstat", "lstat", "newfstatat", "statx", "statfs", "fstatfs",
    "access", "faccessat", "faccessat2",
    "getdents", "getdents64", "getcwd", "chdir", "fchdir",
    "rename", "renameat", "renameat2", "mkdir", "mkdirat", "rmdir",
    "link", "linkat", "unlink", "unlinkat", "symlink", "symlinkat",
    "readlink", "readlinkat",
    "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown",
    "lchown", "fchownat", "umask",
    "utime", "utimes", "futimesat", "utimensat",
    "mknod", "mknodat",                 /* never devices: see seccomp.c */
    "setxattr", "lsetxattr", "fsetxattr", "getxattr", "lgetxattr",
    "fgetxattr", "listxattr", "llistxattr", "flistxattr", "removexattr",
    "lremovexattr", "fremovexattr",
    "ioctl",                            /* not TIOCSTI/TIOCLINUX */
    "inotify_init", "inotify_init1", "inotify_add_watch",
    "inotify_rm_watch",
    "memfd_create",

    /* Linux AIO (databases, some test suites); io_uring is refused */
    "io_setup", "io_destroy", "io_getevents", "io_pgetevents", "io_submit",
    "io_cancel",

    /* waiting for events */
    "poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1",
    "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd",
    "eventfd2", "signalfd", "signalfd4", "timerfd_create",
    "timerfd_settime", "timerfd_gettime",

    /* memory */
    "brk", "mmap", "munmap", "mprotect", "mremap", "msync", "mincore",
    "madvise", "mlock", "mlock2", "munlock", "mlockall", "munlockall",
    "remap_file_pages", "membarrier", "pkey_mprotect", "pkey_alloc",
    "pkey_free",

    /* processes and threads (clone without namespace flags, see
     * seccomp.c; personality limited to harmless personas) */
    "clone", "fork", "vfork", "execve", "execveat", "exit", "exit_group",
    "wait4", "waitid", "kill", "tkill", "tgkill", "pidfd_open",
    "pidfd_send_signal", "getpid", "getppid", "gettid", "getpgid",
    "setpgid", "getpgrp", "getsid", "setsid", "prctl", "arch_prctl",
    "set_tid_address", "set_robust_list", "get_robust_list", "rseq",
    "restart_syscall", "futex", "futex_waitv", "personality",
    "set_thread_area", "get_thread_area",
    "uname", "sysinfo", "getrusage", "times", "getrlimit", "setrlimit",
    "prlimit64", "getpriority", "setpriority", "ioprio_get", "ioprio_set",
    "sched_yield", "sched_getaffinity", "sched_setaffinity",
    "sched_getparam", "sched_setparam", "sched_getscheduler",
    "sched_setscheduler", "sched_get_priority_max",
    "sched_get_priority_min", "sched_rr_get_interval", "sched_getattr",
    "sched_setattr", "getcpu",

    /* a workload may confine itself further, never less */
    "capget", "capset", "seccomp", "landlock_create_ruleset",
    "landlock_add_rule", "landlock_restrict_self",

    /* credentials: without capabilities these only shuffle the ids the
     * process already has */
    "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid",
    "getgroups", "setuid", "setgid", "setreuid", "setregid", "setresuid",
    "setresgid", "setfsuid", "setfsgid", "setgroups",

    /* signals and timers */
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending",
    "rt_sigtimedwait", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
    "rt_sigsuspend", "sigaltstack", "pause", "alarm", "getitimer",
    "setitimer", "nanosleep", "clock_nanosleep", "clock_gettime",
    "clock_getres", "gettimeofday", "time", "timer_create",
    "timer_settime", "timer_gettime", "timer_getoverrun", "timer_delete",

    /* System V and POSIX IPC: the exec has its own ipc namespace */
    "shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop",
    "semctl", "msgget", "msgsnd", "msgrcv", "msgctl", "mq_open",
    "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
    "mq_getsetattr",

    /* sockets (families limited, see seccomp.c) */
    "socket", "socketpair", "connect", "accept", "accept4", "bind",
    "listen", "shutdown", "getsockname", "getpeername", "setsockopt",
    "getsockopt", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg",
    "recvmmsg",

    "getrandom",

    NULL
};


const char *const  vsb_sc_refused_eperm[] = {
    /* filesystem namespace: a workload never rearranges its mounts or
     * escapes its root */
    "mount", "umount", "umount2", "pivot_root", "chroot",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
    "mount_setattr",

    /* namespaces: new user namespaces are the largest source of kernel
     * privilege escalations; joining others is never needed */
    "unshare", "setns",

    /* other processes' memory and tracing */
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    "pidfd_getfd", "process_madvise",

    /* kernel programmability, profiling and tracing */
    "bpf", "perf_event_open", "lookup_dcookie", "fanotify_init",
    "fanotify_mark",

    /* the kernel keyring is not namespaced */
    "keyctl", "add_key", "request_key",

    /* kernel replacement and modules */
    "kexec_load", "kexec_file_load", "init_module", "finit_module",
    "delete_module", "create_module", "get_kernel_syms", "query_module",

    /* a rich source of use-after-free exploits (race widening) */
    "userfaultfd",

    /* io_uring performs its operations without passing through seccomp */
    "io_uring_setup", "io_uring_enter", "io_uring_register",

    /* file handles bypass path-based confinement (shocker) */
    "open_by_handle_at", "name_to_handle_at",

    /* host-wide state: accounting, swap, power, log, clocks, names */
    "acct", "swapon", "swapoff", "reboot", "syslog",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "sethostname", "setdomainname", "quotactl", "quotactl_fd",
    "vhangup", "nfsservctl",

    /* hardware and legacy interfaces */
    "iopl", "ioperm", "modify_ldt", "uselib", "ustat", "sysfs", "_sysctl",
    "vm86", "vm86old",

    /* NUMA policy: host-wide memory placement */
    "get_mempolicy", "set_mempolicy", "set_mempolicy_home_node", "mbind",
    "move_pages", "migrate_pages",

    NULL
};


const char *const  vsb_sc_refused_enosys[] = {
    /* its flags are in memory seccomp cannot read: ENOSYS makes libc
     * fall back to clone, whose flags the filter checks */
    "clone3",

    NULL
};


uint64_t  vsb_sc_eperm_map[VSB_SC_NR_MAX / 64];
