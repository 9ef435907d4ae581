/*
 * Veto Sandbox: what Redis Sentinel tells a worker, read.  Sentinels are
 * infrastructure, but what they send is still parsed as untrusted bytes:
 * an address must be numeric (a worker never resolves a name) and the
 * +switch-master message must have its five fields exactly.  Pure (no
 * connection, no pool): ngx_http_veto_sandbox_sentinel.c uses it, the
 * unit tests and the fuzzer call it directly.
 */

#ifndef _NGX_HTTP_VSB_SENTINEL_H_INCLUDED_
#define _NGX_HTTP_VSB_SENTINEL_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>


/* an address as text, and its NUL */
#define NGX_HTTP_VSB_SENTINEL_HOST_LEN  (NGX_SOCKADDR_STRLEN + 1)


/*
 * host and port as a sentinel answers them: NGX_OK with out (at least
 * NGX_HTTP_VSB_SENTINEL_HOST_LEN bytes) NUL terminated and *pout 1..65535;
 * NGX_DECLINED for a name instead of an IPv4 or IPv6 address; NGX_ERROR
 * for anything else.
 */
ngx_int_t ngx_http_veto_sandbox_sentinel_addr(u_char *host, size_t host_len,
    u_char *port, size_t port_len, u_char *out, in_port_t *pout);

/*
 * The message of +switch-master: "<name> <old ip> <old port> <ip> <port>".
 * NGX_OK: it moves the master called name, to host:*port (as above);
 * NGX_DECLINED: another master of these sentinels; NGX_ERROR: malformed,
 * or the new address is not numeric.
 */
ngx_int_t ngx_http_veto_sandbox_sentinel_switch(u_char *msg, size_t len,
    ngx_str_t *name, u_char *host, in_port_t *port);

/*
 * The message of +failover-state-send-slaveof-noone, sent as a failover
 * promotes a replica: "slave <ip:port> <ip> <port> @ <name> <master ip>
 * <master port>".  NGX_OK: a replica of the master called name is being
 * promoted, host:*port is that master (the one to stop writing to);
 * NGX_DECLINED: another master's; NGX_ERROR: malformed.
 */
ngx_int_t ngx_http_veto_sandbox_sentinel_promoting(u_char *msg, size_t len,
    ngx_str_t *name, u_char *host, in_port_t *port);


#endif /* _NGX_HTTP_VSB_SENTINEL_H_INCLUDED_ */
