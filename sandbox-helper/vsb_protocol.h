/*
 * Veto Sandbox helper protocol, version 1.
 *
 * Both sides include this header: sandbox-helper (the privileged daemon)
 * and ngx_veto_sandbox_module (its only intended client).  It has no
 * dependencies beyond <stdint.h>, so the nginx module can include it
 * without dragging helper internals along.
 *
 * Transport: a SOCK_STREAM unix socket.  One request is in flight per
 * connection: the client sends a frame and reads exactly one reply frame
 * before it sends the next.  The helper closes the connection after a
 * bad_frame, frame_too_large or not_permitted reply, because framing (or
 * trust) is lost.
 *
 * Frame:
 *
 *     offset  size  field
 *     0       4     magic "VSB1"
 *     4       4     JSON header length, big-endian, 1 .. VSB_MAX_JSON
 *     8       4     payload length, big-endian, 0 .. VSB_MAX_PAYLOAD
 *     12      n     JSON header: one UTF-8 JSON object
 *     12+n    m     payload: raw bytes (file content, stdin, output)
 *
 * Every request header is an object with "op" and only the fields listed
 * for that op; an unknown field is an error, never ignored.  Every reply
 * header has "ok": true or false.  A failed reply is
 *
 *     {"ok": false, "error": "<VSB_E_*>", "detail": "<text>",
 *      "field": "<name>"  (when one field is at fault),
 *      "limit": "<name>"  (with over_ceiling)}
 *
 * Ops (fields marked ? are optional):
 *
 *   ping      {}                     -> {version, cgroup: "v1"|"v2",
 *                                        sandboxes: n, epoch: EPOCH,
 *                                        started_at (unix seconds),
 *                                        seccomp: "allowlist",
 *                                        landlock_abi: n (0: none),
 *                                        egress: EGRESS}
 *   create    {tenant, agent, profile?, limits?, ttl_s?, network?, env?,
 *              metadata?}           -> {sandbox: SANDBOX}
 *             network: "none" (default) or NETWORK.  With NETWORK the
 *             reply waits until the egress proxy serves the sandbox;
 *             errors: bad_value (egress = off, bad entry), bad_type,
 *             missing_field, unknown_field (field "network",
 *             "network.allow" or "network.ask"), over_ceiling (limit
 *             network_entries or network_bytes), unavailable (the proxy
 *             is not running: retry later).
 *   update_network {tenant, agent, id, add: [ENTRY...]}
 *                                   -> {id, network: NETWORK, added}
 *             adds entries to a live allowlist sandbox's allowlist (an
 *             entry already there is kept once); the proxy applies them
 *             to new connections before the reply.  Errors: bad_value (a
 *             "none" sandbox, a bad entry, empty add), over_ceiling
 *             (counting the entries already there), busy (another change
 *             of it in progress), unavailable (proxy restarting).
 *   status    {tenant, agent, id}   -> {sandbox: SANDBOX}
 *   list      {tenant, agent?}      -> {sandboxes: [SANDBOX, ...]}
 *   exec      {tenant, agent, id, argv, cwd?, env?, timeout_s?}
 *             payload: stdin bytes
 *                                   -> {exit_code: int|null,
 *                                       signal: int|null,
 *                                       timed_out, oom_killed: bool,
 *                                       stdout_len, stderr_len: int,
 *                                       stdout_truncated,
 *                                       stderr_truncated: bool,
 *                                       usage: {cpu_ms, wall_ms,
 *                                               peak_memory_bytes,
 *                                               peak_pids},
 *                                       refused_syscalls: [{nr, name|null,
 *                                         errno: "EPERM"|"ENOSYS",
 *                                         count}] (<= 16 entries),
 *                                       refused_syscalls_total,
 *                                       network: "none" | ATTEMPTS}
 *             reply payload: stdout_len bytes of stdout, then
 *             stderr_len bytes of stderr
 *   write_file {tenant, agent, id, path, mode?}
 *             payload: file content -> {path, size, sha256}
 *             mode: integer 0 .. 0777, default 0644; setuid, setgid and
 *             sticky bits are refused (bad_value, field "mode")
 *   read_file {tenant, agent, id, path}
 *                                   -> {path, size, sha256}
 *             reply payload: file content
 *   destroy   {tenant, agent, id}   -> {id, state: "terminated",
 *                                       confirmed: {processes, cgroups,
 *                                       network, mounts, files: true}}
 *             or error termination_failed with "step" naming what could
 *             not be confirmed.  The reply comes once everything is
 *             confirmed gone; the helper serves other requests meanwhile
 *             (the sandbox's state is then "destroying").
 *   profiles  {}                     -> {profiles: [PROFILE, ...]}
 *             every configured profile (at most 16; which of them a
 *             caller may use is the gateway's policy).  The reply fits
 *             VSB_MAX_JSON: checked when the helper starts.
 *
 * Any request may carry "request_id" (string, at most VSB_MAX_ID_LEN
 * bytes); the reply echoes it.
 *
 *   SANDBOX = {id, epoch: EPOCH, tenant, agent, profile,
 *              profile_digest: "sha256:<64 hex>"|null (the image the
 *              sandbox's root is made of; null: a directory profile),
 *              state: "ready"|"destroying"|"termination_failed",
 *              network: "none" | NETWORK ("allowlist" in list replies),
 *              limits: LIMITS, ttl_s,
 *              created_at, expires_at (unix seconds),
 *              execs_running, metadata?,
 *              usage?: {memory_bytes, pids, disk_used_bytes} (status)}
 *   LIMITS  = {memory_mb, pids, cpu_percent, disk_mb, timeout_s,
 *              output_bytes}
 *   NETWORK = {allow: [ENTRY...], ask?: [ENTRY...]}: allow is what the
 *             sandbox reaches, ask what it may request (its refusals say
 *             which approval to ask for).  Both together: at most the
 *             helper's egress_max_entries (<= 256) entries and
 *             VSB_MAX_NETWORK_BYTES bytes.
 *   ENTRY   = "host[:port]" | "*.suffix[:port]" | IP literal ("[v6]:port"),
 *             1 .. VSB_MAX_NETWORK_ENTRY bytes; no port means 80 and 443;
 *             "*.a.test" matches names strictly below a.test.
 *   ATTEMPTS = {attempts: [ATTEMPT...], dropped: n, complete: bool}: every
 *             connection or refused DNS question of the sandbox that
 *             began while the exec ran (execs of one sandbox share its
 *             network: concurrent execs list the same attempts), within
 *             VSB_MAX_EXEC_NETWORK_BYTES, refusals kept first; dropped
 *             counts those not listed; complete is false when records
 *             were lost (the proxy's queue overflowed, it restarted or
 *             did not answer).
 *   ATTEMPT = {kind: "http"|"connect"|"tls"|"dns", host, port?, address?
 *             (dialled or refused), decision: "allowed"|"refused"|"error",
 *             reason?, askable, bytes_out, bytes_in, start_ms (unix ms),
 *             duration_ms, qtype? (dns)}
 *   EGRESS  = {available, state: "off"|"unavailable"|"starting"|"up"|
 *             "restarting", nftables, restarts, detail?}
 *   PROFILE = {name, kind: "image"|"directory",
 *              digest: "sha256:<64 hex>"|null (images only),
 *              description (<= 256 bytes),
 *              os_release: {id?, version_id?, pretty_name?},
 *              tools: {package: version} (notable packages: python3,
 *              nodejs, gcc, make, git, libc6, ...; versions <= 64 bytes),
 *              tools_truncated?: true (left out to fit the reply),
 *              default: bool (the profile a create without "profile"
 *              gets), available: bool (its image is in the store, its
 *              directory exists)}
 *   EPOCH   = VSB_EPOCH_LEN lowercase hex digits, random, made when the
 *             helper starts.  A SANDBOX carries the epoch of the helper
 *             run that created it.  Sandboxes never outlive their helper
 *             (a restart removes whatever a previous run left), so a
 *             client holding a sandbox whose epoch differs from the
 *             epoch ping reports now knows that sandbox is gone.
 *
 * tenant, agent: 1 .. VSB_MAX_ID_LEN bytes of printable ASCII (0x21-0x7e).
 * id: "sb-" followed by 24 lowercase hex digits.
 * path: workspace-relative, see vsb_path_check() in the helper; at most
 * VSB_MAX_PATH bytes, components at most 255 bytes, no "..", no ".",
 * no empty component, no leading "/", no NUL.
 * cwd: absolute path inside the sandbox, default "/workspace".
 * env: object of string values; names match [A-Za-z_][A-Za-z0-9_]*.
 * Every sandbox belongs to the (tenant, agent) that created it; any op
 * naming it with another owner answers not_found, exactly as an unknown
 * id does.  not_found names its field: "id" for a sandbox, "path" for a
 * file of an existing sandbox (read_file).
 * profile_unavailable (create, field "profile"): the profile exists but
 * its image is no longer in the store (removed since the helper
 * started); the detail names the digest.  Another profile may work.
 */

#ifndef VSB_PROTOCOL_H
#define VSB_PROTOCOL_H

#include <stdint.h>

#define VSB_PROTOCOL_VERSION      1

#define VSB_FRAME_MAGIC           "VSB1"
#define VSB_FRAME_MAGIC_LEN       4
#define VSB_FRAME_HEADER_LEN      12

/* Absolute protocol limits; the helper's config may only lower them. */
#define VSB_MAX_JSON              (64 * 1024)
#define VSB_MAX_PAYLOAD           (64 * 1024 * 1024)
/* the payload of an op that streams it (extract_archive): never held
 * whole, bounded by the config's max_archive_bytes */
#define VSB_MAX_STREAM_PAYLOAD    0xffffffffu
/* an event frame's payload, at most */
#define VSB_STREAM_CHUNK          65536

#define VSB_MAX_ID_LEN            128
#define VSB_SANDBOX_ID_LEN        27          /* "sb-" + 24 hex */
#define VSB_EXEC_ID_LEN           19          /* "ex-" + 16 hex */
#define VSB_EPOCH_LEN             32          /* hex digits */
#define VSB_MAX_PATH              4096
#define VSB_MAX_NAME              255
#define VSB_MAX_ARGV              1024
#define VSB_MAX_ENV               256
#define VSB_MAX_METADATA_JSON     4096
#define VSB_MAX_NETWORK_ENTRY     300         /* one allowlist entry */
#define VSB_MAX_NETWORK_BYTES     8192        /* allow + ask entries */
#define VSB_MAX_EXEC_NETWORK_BYTES 16384      /* an exec's attempts */

/* Ops. */
#define VSB_OP_PING               "ping"
#define VSB_OP_CREATE             "create"
#define VSB_OP_STATUS             "status"
#define VSB_OP_LIST               "list"
#define VSB_OP_EXEC               "exec"
#define VSB_OP_WRITE_FILE         "write_file"
#define VSB_OP_READ_FILE          "read_file"
#define VSB_OP_DESTROY            "destroy"
#define VSB_OP_UPDATE_NETWORK     "update_network"
#define VSB_OP_PROFILES           "profiles"
#define VSB_OP_EXEC_STATUS        "exec_status"
#define VSB_OP_EXEC_OUTPUT        "exec_output"
#define VSB_OP_EXEC_KILL          "exec_kill"
#define VSB_OP_EXTRACT_ARCHIVE    "extract_archive"
#define VSB_OP_EXPORT_ARCHIVE     "export_archive"

/* Event frames (no "ok"): "event" is one of these. */
#define VSB_EVENT_OUTPUT          "output"
#define VSB_EVENT_DATA            "data"

/* Error names carried in a failed reply's "error". */
#define VSB_E_BAD_FRAME           "bad_frame"
#define VSB_E_FRAME_TOO_LARGE     "frame_too_large"
#define VSB_E_BAD_JSON            "bad_json"
#define VSB_E_UNKNOWN_OP          "unknown_op"
#define VSB_E_UNKNOWN_FIELD       "unknown_field"
#define VSB_E_MISSING_FIELD       "missing_field"
#define VSB_E_BAD_TYPE            "bad_type"
#define VSB_E_BAD_VALUE           "bad_value"
#define VSB_E_BAD_PATH            "bad_path"
#define VSB_E_NOT_FOUND           "not_found"
#define VSB_E_OVER_CEILING        "over_ceiling"
#define VSB_E_CAPACITY            "capacity"
#define VSB_E_BUSY                "busy"
#define VSB_E_NOT_A_FILE          "not_a_file"
#define VSB_E_NOT_A_DIRECTORY     "not_a_directory"
#define VSB_E_BAD_ARCHIVE         "bad_archive"
#define VSB_E_TIMED_OUT           "timed_out"
#define VSB_E_FILE_TOO_LARGE      "file_too_large"
#define VSB_E_NO_SPACE            "no_space"
#define VSB_E_IO                  "io_error"
#define VSB_E_EXEC_FAILED         "exec_failed"
#define VSB_E_TERMINATION_FAILED  "termination_failed"
#define VSB_E_NOT_PERMITTED       "not_permitted"
#define VSB_E_UNAVAILABLE         "unavailable"
#define VSB_E_PROFILE_UNAVAILABLE "profile_unavailable"
#define VSB_E_INTERNAL            "internal"

/* Limit names carried in "limit" with over_ceiling, and in LIMITS. */
#define VSB_LIMIT_MEMORY_MB       "memory_mb"
#define VSB_LIMIT_PIDS            "pids"
#define VSB_LIMIT_CPU_PERCENT     "cpu_percent"
#define VSB_LIMIT_DISK_MB         "disk_mb"
#define VSB_LIMIT_TIMEOUT_S       "timeout_s"
#define VSB_LIMIT_OUTPUT_BYTES    "output_bytes"
#define VSB_LIMIT_TTL_S           "ttl_s"
#define VSB_LIMIT_FILE_BYTES      "file_bytes"
#define VSB_LIMIT_SANDBOXES       "sandboxes"
#define VSB_LIMIT_NETWORK_ENTRIES "network_entries"
#define VSB_LIMIT_NETWORK_BYTES   "network_bytes"
#define VSB_LIMIT_ARCHIVE_BYTES   "archive_bytes"
#define VSB_LIMIT_EXECS           "execs"
#define VSB_LIMIT_BACKGROUND      "background_execs"


static inline void
vsb_frame_put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char) (v >> 24);
    p[1] = (unsigned char) (v >> 16);
    p[2] = (unsigned char) (v >> 8);
    p[3] = (unsigned char) v;
}


static inline uint32_t
vsb_frame_get_u32(const unsigned char *p)
{
    return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16)
           | ((uint32_t) p[2] << 8) | (uint32_t) p[3];
}


/* Fills the 12-byte frame prefix. */
static inline void
vsb_frame_header_encode(unsigned char *h, uint32_t json_len,
    uint32_t payload_len)
{
    h[0] = 'V'; h[1] = 'S'; h[2] = 'B'; h[3] = '1';
    vsb_frame_put_u32(h + 4, json_len);
    vsb_frame_put_u32(h + 8, payload_len);
}

#endif /* VSB_PROTOCOL_H */
