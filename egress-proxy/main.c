/*
 * egress-proxy: the Veto Sandbox egress proxy.
 *
 *     egress-proxy -c /etc/veto-sandbox/egress.conf [-t]
 *
 * Start-up, in this order: read the config, load the credentials and
 * the interception CA (making it if missing), bind the control socket,
 * initialize the resolver (reads /etc/resolv.conf), drop privileges,
 * read the host's addresses, install the seccomp filter, serve.
 * -t checks the config and exits.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eg_control.h"
#include "eg_cred.h"
#include "eg_tls.h"
#include "eg_log.h"
#include "eg_privdrop.h"
#include "eg_record.h"
#include "eg_resolve.h"
#include "eg_seccomp.h"
#include "egress.h"


static void
eg_usage(void)
{
    fprintf(stderr, "usage: egress-proxy -c CONFIG [-t]\n");
}


int
main(int argc, char **argv)
{
    const char  *conf = NULL;
    int          test = 0, opt;
    char         err[512];
    sigset_t     set;

    while ((opt = getopt(argc, argv, "c:th")) != -1) {
        switch (opt) {
        case 'c': conf = optarg; break;
        case 't': test = 1; break;
        default: eg_usage(); return 2;
        }
    }
    if (conf == NULL || optind != argc) {
        eg_usage();
        return 2;
    }

    eg_config_defaults(&eg_proxy.cf);
    if (eg_config_load(&eg_proxy.cf, conf, err, sizeof(err)) != 0) {
        fprintf(stderr, "egress-proxy: %s\n", err);
        return 1;
    }
    if (eg_proxy.cf.control_buffer_bytes
        < 2 * eg_proxy.cf.record_buffer_bytes + 65536)
    {
        fprintf(stderr, "egress-proxy: %s: control_buffer_bytes must be at "
                "least 2 * record_buffer_bytes + 65536 (records are sent "
                "before each reply)\n", conf);
        return 1;
    }
    if (test) {
        printf("egress-proxy: %s ok\n", conf);
        return 0;
    }
    eg_log_set_level(eg_proxy.cf.log_level);

    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
        perror("egress-proxy: sigprocmask");
        return 1;
    }

    if (eg_loop_init() != 0) {
        return 1;
    }

    eg_record_init(eg_proxy.cf.record_buffer_bytes);

    if (eg_resolve_init(eg_proxy.cf.resolver, eg_proxy.cf.dns_timeout_ms,
                        err, sizeof(err)) != 0
        || eg_cred_load(eg_proxy.cf.credentials_dir, eg_proxy.cf.user, err,
                        sizeof(err)) != 0
        || eg_tls_init(&eg_proxy.cf, err, sizeof(err)) != 0
        || eg_control_listen(eg_proxy.cf.control_socket,
                             eg_proxy.cf.control_socket_mode, err,
                             sizeof(err)) != 0
        || eg_privdrop(eg_proxy.cf.user, err, sizeof(err)) != 0)
    {
        eg_log(EG_LOG_ERROR, "%s", err);
        return 1;
    }

    eg_sandbox_refresh_local();

    if (eg_proxy.cf.seccomp && eg_seccomp_install(err, sizeof(err)) != 0) {
        eg_log(EG_LOG_ERROR, "%s", err);
        return 1;
    }

    eg_log(EG_LOG_INFO, "ready: control socket %s, uid %u, seccomp %s, "
           "resolver %s, %u operator ranges, %zu credentials",
           eg_proxy.cf.control_socket,
           (unsigned) getuid(), eg_proxy.cf.seccomp ? "on" : "off",
           eg_proxy.cf.resolver[0] ? eg_proxy.cf.resolver : "system",
           eg_proxy.cf.nallow_ranges, eg_cred_count());

    if (eg_loop_run() != 0) {
        return 1;
    }

    while (eg_proxy.sandboxes != NULL) {
        eg_sandbox_unlink_free(eg_proxy.sandboxes, NULL, NULL);
    }
    eg_control_shutdown();
    eg_resolve_shutdown();
    eg_tls_shutdown();
    eg_cred_free_all();
    while (eg_record_queued() > 0) {
        size_t  len;
        free(eg_record_pop(&len));
    }
    free(eg_proxy.local_addrs);
    eg_loop_cleanup();
    eg_log(EG_LOG_INFO, "stopped");
    return 0;
}
