/*
 * Veto Sandbox egress control protocol, version 1: between the helper
 * (client) and the egress proxy (server), over a SOCK_STREAM unix socket
 * whose peer uid the proxy checks.  Both sides include this header.
 *
 * Frames are the helper protocol's (vsb_protocol.h: "VSB1", JSON length,
 * payload length, JSON); the payload is always empty here.  The helper
 * sends one request and waits for its reply; between them the proxy may
 * send any number of event frames.  A request with descriptors carries
 * them as SCM_RIGHTS ancillary data on the sendmsg() that sends the
 * frame, in the order its "listeners" array names them.
 *
 * Requests (fields marked ? are optional; unknown fields are errors):
 *
 *   ping    {}                           -> {version}
 *   add     {sandbox, tenant, listeners: [KIND...], allow: [ENTRY...],
 *            ask?: [ENTRY...], limits?: LIMITS, credentials?: [CRED...]}
 *                                        -> {sandbox, limits: LIMITS}
 *   update  {sandbox, allow: [...], ask?: [...], credentials?: [CRED...]}
 *                                        -> {sandbox}
 *           (credentials absent: the attached ones stay; [] detaches all)
 *   remove  {sandbox}                    -> {sandbox, closed_connections,
 *                                            closed_listeners}
 *   sync    {sandboxes: [ID...]}         -> {removed: [ID...]}
 *           (removes every sandbox not listed: a restarted helper's
 *           cleanup of what a crashed run left)
 *   stats   {sandbox?}                   -> {sandboxes: [STATS...],
 *                                            connections, records_queued,
 *                                            records_dropped}
 *
 * Any request may carry "request_id" (string); the reply echoes it.  A
 * reply is {"ok": true, "op": ..., ...} or {"ok": false, "error": NAME,
 * "detail": text, "field"?: name, "limit"?: name}.
 *
 * Events: {"event": "attempt", sandbox, kind, host, port?, address?,
 * decision: "allowed"|"refused"|"error", reason?, bytes_out, bytes_in,
 * start_ms, duration_ms, askable, qtype?, credential?, injections?,
 * exfiltration?} and {"event":
 * "records_dropped", count}.  Every record queued before the proxy
 * handled a request is sent before that request's reply: a reply is a
 * barrier (the helper sends "stats" at the end of an exec and then has
 * every record of it).
 *
 *   KIND    = "http" | "transparent" | "dns_udp" | "dns_tcp"
 *   ENTRY   = "host[:port]" | "*.suffix[:port]" | IP literal; no port
 *             means 80 and 443
 *   LIMITS  = {max_connections, max_bytes_out, max_bytes_in,
 *              connect_timeout_ms, idle_timeout_ms}, each at most the
 *             proxy's ceiling (over_ceiling otherwise)
 *   ID      = 1 .. 64 bytes of [A-Za-z0-9._-]
 *   tenant  = 1 .. 128 bytes of printable ASCII without spaces (the
 *             helper's tenant of the sandbox: the proxy shares its
 *             connections fairly between tenants, docs/egress.md)
 *   STATS   = {sandbox, tenant, connections, head_connections, bytes_out,
 *              bytes_in, attempts, refused, listeners, injections,
 *              placeholders_refused}; the reply also has credentials:
 *              [{name, loaded, injections, placeholders_refused}] and
 *              leaf_certificates
 *   CRED    = {name, placeholder}: a credential the proxy loaded
 *             or {name, placeholder, value, host, template, header?,
 *             env?, path?}: an agent's own secret (a name none of the
 *             loaded ones have, the binding by the bindings file's rules;
 *             the value wiped once no attachment holds it)
 *             (egress-proxy/eg_cred.h; unknown_credential,
 *             credential_unavailable otherwise) and "veto-cred-" with 32
 *             lower-case hex digits, at most 16 a sandbox
 */
#ifndef VSB_EGRESS_PROTOCOL_H
#define VSB_EGRESS_PROTOCOL_H

#define VSB_EGRESS_PROTOCOL_VERSION  1

#define VSB_EGRESS_MAX_JSON          (64 * 1024)  /* = VSB_MAX_JSON */
#define VSB_EGRESS_MAX_FDS           8
#define VSB_EGRESS_MAX_ID            64
#define VSB_EGRESS_MAX_TENANT        128          /* = VSB_MAX_ID_LEN */
#define VSB_EGRESS_MAX_ENTRIES       256

#define VSB_EGRESS_OP_PING           "ping"
#define VSB_EGRESS_OP_ADD            "add"
#define VSB_EGRESS_OP_UPDATE         "update"
#define VSB_EGRESS_OP_REMOVE         "remove"
#define VSB_EGRESS_OP_SYNC           "sync"
#define VSB_EGRESS_OP_STATS          "stats"

/* Error names beyond vsb_protocol.h's (bad_frame, bad_json, unknown_op,
 * unknown_field, missing_field, bad_type, bad_value, not_found,
 * over_ceiling, capacity, internal). */
#define VSB_EGRESS_E_EXISTS          "exists"
#define VSB_EGRESS_E_BAD_FDS         "bad_descriptors"

/* Where the helper puts the sockets inside a sandbox's namespace. */
#define VSB_EGRESS_HTTP_PORT         3128
#define VSB_EGRESS_TRANSPARENT_PORT  3129
#define VSB_EGRESS_DNS_ADDR          "127.0.0.53"

#endif
