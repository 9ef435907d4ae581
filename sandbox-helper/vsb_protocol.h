/*
 * Veto Sandbox helper protocol, version 1.
 *
 * Both sides include this header: sandbox-helper (the privileged daemon)
 * and ngx_veto_sandbox_module (its only intended client).  It has no
 * dependencies beyond <stdint.h>, so the nginx module can include it
 * without dragging helper internals along.
 *
 * Transport: a SOCK_STREAM unix socket.  Requests on a connection are
 * handled one at a time, in order: the client sends a frame, then reads
 * frames until the one reply (a frame with "ok"), then may send the next
 * request; or it pipelines: sends the next frames before the replies,
 * which come in the order of the requests (docs/helper-protocol.md,
 * "Pipelining": each frame is read only once the one before it has been
 * answered or queued its reply, so every per-frame limit holds).  Before the
 * reply, a streaming request (below) receives event frames: frames with
 * "event" and never "ok".  The helper closes the connection after a
 * bad_frame, frame_too_large or not_permitted reply, because framing (or
 * trust) is lost.
 *
 * Frame:
 *
 *     offset  size  field
 *     0       4     magic "VSB1"
 *     4       4     JSON header length, big-endian, 1 .. VSB_MAX_JSON
 *     8       4     payload length, big-endian (bounds below)
 *     12      n     JSON header: one UTF-8 JSON object
 *     12+n    m     payload: raw bytes (file content, stdin, output)
 *
 * Payload bounds.  A request's payload: at most the config's
 * max_file_bytes (<= VSB_MAX_PAYLOAD), read whole before the op runs;
 * except extract_archive's: at most max_archive_bytes (<=
 * VSB_MAX_STREAM_PAYLOAD), handed to the op as it arrives and never held
 * whole (a reply that comes before the payload is all sent is still
 * written at once; the rest of the payload is then read and dropped).  A
 * reply's payload: at most VSB_MAX_PAYLOAD; an event's: 1 ..
 * VSB_STREAM_CHUNK.
 *
 * Every request header is an object with "op" and only the fields listed
 * for that op; an unknown field is an error, never ignored.  Every reply
 * header has "ok": true or false.  A failed reply is
 *
 *     {"ok": false, "error": "<VSB_E_*>", "detail": "<text>",
 *      "field": "<name>"  (when one field is at fault),
 *      "limit": "<name>"  (with over_ceiling, file_too_large, busy,
 *                          no_space, timed_out: the bound that was hit),
 *      "step": "<name>"   (with termination_failed),
 *      "end_reason": END  (with ended),
 *      "epoch": EPOCH     (with epoch_mismatch: this run's),
 *      "stderr": "<text>" (archive ops: what tar said, head and tail,
 *                          <= 4 KiB, non-printable bytes as '?')}
 *
 * Events (streaming requests only, in order, before the reply):
 *
 *   {"event": "output", "stream": "stdout"|"stderr", "offset": N}
 *             payload: the stream's bytes from position N.  Offsets of a
 *             stream grow; a streamed exec's are contiguous, a followed
 *             background exec's may jump where bytes were not retained.
 *   {"event": "data", "offset": N}
 *             payload: an export's archive bytes from position N,
 *             contiguous.
 *
 * Flow control: the helper queues at most VSB_STREAM_WINDOW bytes of
 * events per connection, then stops reading what it streams (the
 * workload, or tar, blocks on its pipe) until the client has read them.
 * A client that reads nothing for 60 s is disconnected.  A client that
 * leaves kills its foreground exec (streamed or not) and the tar of its
 * archive op, with every process of it; a background exec goes on.
 *
 * Ops (fields marked ? are optional):
 *
 *   ping      {}                     -> {version, cgroup: "v1"|"v2",
 *                                        sandboxes: n, epoch: EPOCH,
 *                                        started_at (unix seconds),
 *                                        seccomp: "allowlist",
 *                                        landlock_abi: n (0: none),
 *                                        egress: EGRESS,
 *                                        credentials?: [BINDING...]}
 *             credentials: with egress_credentials set, and not in a
 *             "brief" ping: the operator's bindings, never a value
 *             (BINDING = {name, host, header, env, path?}).
 *   create    {tenant, agent, profile?, limits?, ttl_s?, idle_s?,
 *              network?, env?, metadata?, caps?}
 *                                   -> {sandbox: SANDBOX}
 *             caps: {LIMIT name or ttl_s, idle_s: n}, the gateway's
 *             ceilings (its policy's): a value the request leaves out
 *             is the helper's default, at most its cap (a value it names
 *             is the gateway's decision, within the helper's max_*).
 *             ttl_s: the lifetime, counted from creation, 1 .. max_ttl_s;
 *             idle_s: the sandbox ends once no exec (background ones
 *             included) has run and no request has named it for this
 *             long, 1 .. max_idle_s.  Both enforced by the helper's own
 *             timers, with or without a client (END "expired", "idle").
 *             network: "none" (default) or NETWORK.  With NETWORK the
 *             reply waits until the egress proxy serves the sandbox;
 *             errors: bad_value (egress = off, bad entry), bad_type,
 *             missing_field, unknown_field (field "network",
 *             "network.allow" or "network.ask"), over_ceiling (limit
 *             network_entries or network_bytes), unavailable (the proxy
 *             is not running: retry later).
 *   update_network {tenant, agent, id, add?: [ENTRY...],
 *              credentials?: [NAME...] | credentials_remove?: [NAME...]}
 *                                   -> {id, network: NETWORK, added?,
 *                                       attached?, detached?}
 *             credentials attaches the operator's credentials by name;
 *             credentials_remove (alone) detaches ones the sandbox holds
 *             (not_found, field "credentials_remove", for another): the
 *             proxy refuses their placeholders from the reply on, the
 *             next exec lacks their variables.
 *             adds entries to a live allowlist sandbox's allowlist (an
 *             entry already there is kept once); the proxy applies them
 *             to new connections before the reply.  Errors: bad_value (a
 *             "none" sandbox, a bad entry, empty add), over_ceiling
 *             (counting the entries already there), busy (another change
 *             of it in progress), unavailable (proxy restarting).
 *   status    {tenant, agent, id}   -> {sandbox: SANDBOX | ENDED}
 *             a sandbox that ended within ended_retention_s answers its
 *             ENDED record (state "ended"); after that, not_found.
 *   list      {tenant, agent?, ended?}
 *                                   -> {sandboxes: [SANDBOX, ...],
 *                                       ended?: [ENDED, ...],
 *                                       ended_truncated?: bool}
 *             ended: true adds the owner's retained ENDED records,
 *             newest first, at most VSB_MAX_ENDED_LIST bytes of them
 *             (ended_truncated: some older ones were left out).
 *             Each SANDBOX has its metadata while the list's come to at
 *             most VSB_LIST_METADATA_BYTES; past that "metadata_omitted":
 *             true (status has it).
 *   update_lifetime {tenant, agent, id, ttl_s?, idle_s?}
 *                                   -> {id, ttl_s, idle_s, created_at,
 *                                       expires_at, active_at,
 *                                       from_snapshot?}
 *             at least one of them (from_snapshot: a fork's snapshot).  ttl_s: the new lifetime counted from
 *             creation (not an increment: the same request twice changes
 *             nothing), 1 .. max_ttl_s (over_ceiling, limit "ttl_s"); one
 *             that ends before now is bad_value (destroy ends a sandbox).
 *             idle_s: 1 .. max_idle_s (limit "idle_s"), from now on.
 *             Written to the sandbox's state file before the reply.
 *   ended     {after? (0), max? (VSB_ENDED_PAGE)}
 *                                   -> {epoch: EPOCH, ended: [ENDED, ...],
 *                                       next: SEQ, more: bool}
 *             every tenant's ENDED records with seq > after, oldest
 *             first, within VSB_MAX_ENDED_LIST bytes: the gateway polls
 *             it to learn of ends it did not ask for (expiry, idle,
 *             limits, restarts).  Ask again from next while more.  seq
 *             grows within one run; after a restart (another epoch) start
 *             from 0 again: a record may come twice, never not at all.
 *   exec      {tenant, agent, id, argv, cwd?, env?, timeout_s?,
 *              output_bytes?, stream?, background?, caps?}
 *             caps: {timeout_s?, output_bytes?}: without timeout_s
 *               (output_bytes) the sandbox's own, at most the cap.
 *             payload: stdin bytes
 *             output_bytes: kept per stream for this exec, 1 ..
 *               max_output_bytes (over_ceiling), default the sandbox's.
 *             plain:      -> RESULT + {stdout_len, stdout_head_len,
 *                                      stderr_len, stderr_head_len}
 *                reply payload: stdout_len bytes of stdout (its first
 *                stdout_head_len bytes are the head, the rest the tail),
 *                then stderr_len bytes of stderr (the same)
 *             stream: true: events "output" as the workload writes, then
 *                         -> RESULT (no payload; nothing is dropped, every
 *                            byte went as events)
 *             background: true (not with stream):
 *                         -> {exec: EXEC} at once; the exec runs on with
 *                            no client (see exec_status)
 *   exec_status {tenant, agent, id, exec}
 *                                   -> {exec: EXEC}
 *   exec_output {tenant, agent, id, exec, stream: "stdout"|"stderr",
 *              offset? (0), max_bytes? (1 MiB, <= max_file_bytes),
 *              follow? (false)}
 *             -> {exec: EXEC, stream, offset (where the bytes start: >
 *                 the offset asked when bytes in between were not
 *                 retained), skipped_bytes, len, next_offset, total
 *                 (written so far), complete (ended, and nothing more
 *                 after next_offset)}
 *                reply payload: len bytes, one contiguous run; ask again
 *                from next_offset
 *             follow: true (no max_bytes): events "output" from offset, as
 *                the exec writes, until it has ended and all is sent,
 *                then -> {exec: EXEC, stream, next_offset (= its total),
 *                complete: true}
 *             an offset past the total: bad_value, field "offset"
 *   exec_kill {tenant, agent, id, exec}
 *             running: kills it; the reply comes once every process of it
 *                is gone -> {exec: EXEC, killed: true,
 *                            confirmed: {processes: true}}
 *             ended:     -> {exec: EXEC, killed: false}
 *   write_file {tenant, agent, id, path, mode?}
 *             payload: file content -> {path, size, sha256}
 *             mode: integer 0 .. 0777, default 0644; setuid, setgid and
 *             sticky bits are refused (bad_value, field "mode")
 *   read_file {tenant, agent, id, path}
 *                                   -> {path, size, sha256}
 *             reply payload: file content
 *   extract_archive {tenant, agent, id, path? (the workspace),
 *              format? ("tar"|"tar.gz"|"tar.zst"|"tar.xz"; default: told
 *              by the payload's first bytes)}
 *             payload: the archive, streamed to the profile's tar inside
 *             the sandbox; path is made (0755, as the workload's user) if
 *             missing
 *                                   -> {path, format, size, sha256,
 *                                       stderr? (tar's warnings)}
 *             errors: bad_archive (tar refused it or part of it: what
 *             came before the error stays extracted), no_space (the
 *             sandbox's disk or inodes ran out: tar is stopped at once;
 *             limit "disk_mb"), timed_out (limit "timeout_s": the
 *             sandbox's default exec timeout), file_too_large (limit
 *             "archive_bytes", answered from the frame's header, then the
 *             connection is closed), exec_failed (no tar in the profile,
 *             out of memory), not_a_directory, bad_path, busy (limit
 *             "execs": tar is one more exec)
 *   export_archive {tenant, agent, id, path? (the workspace),
 *              format? ("tar" by default)}
 *             events "data": the archive of path's contents (members
 *             "./...", owner 0/0, sparse files kept sparse), then
 *                                   -> {path, format, size, sha256,
 *                                       stderr?}
 *             Errors before the first event: not_found, not_a_directory,
 *             bad_path, busy.  After it (the client must drop what came):
 *             file_too_large (limit "archive_bytes"), io_error (tar could
 *             not read something: see stderr), no_space, timed_out.
 *   destroy   {tenant, agent?, id, reason? ("deleted"|"admin")}
 *                                   -> {id, state: "terminated",
 *                                       confirmed: {processes, cgroups,
 *                                       network, mounts, files: true},
 *                                       ended: ENDED}
 *             reason: the END reason put on record (default "deleted";
 *             "admin": an operator ended another agent's sandbox: then
 *             agent may be left out, and the tenant's sandbox of that id
 *             is ended whoever made it; ENDED names its owner).  A
 *             sandbox that ended already answers the error ended; one
 *             whose termination failed is tried again.
 *             or error termination_failed with "step" naming what could
 *             not be confirmed.  The reply comes once everything is
 *             confirmed gone; the helper serves other requests meanwhile
 *             (the sandbox's state is then "destroying").  Running execs
 *             of every kind are killed, background ones forgotten.
 *   profiles  {}                     -> {profiles: [PROFILE, ...]}
 *             every configured profile (at most 16; which of them a
 *             caller may use is the gateway's policy).  The reply fits
 *             VSB_MAX_JSON: checked when the helper starts.
 *   stats     {}                     -> {sandboxes, sandboxes_ready,
 *                                        sandboxes_max, execs_running,
 *                                        teardowns_pending (destroying),
 *                                        teardowns_failed
 *                                        (termination_failed),
 *                                        started_at (unix seconds),
 *                                        uptime_s, connections,
 *                                        buffered_bytes (request and
 *                                        reply frames held),
 *                                        buffer_limit_bytes,
 *                                        egress: EGRESS}
 *             counted when asked, for the gateway's metrics; names no
 *             tenant, agent or sandbox.
 *   usage     {tenant, agent, id}   -> {id, measured_at (unix seconds),
 *                                        memory_bytes, memory_peak_bytes,
 *                                        memory_limit_bytes, oom_kills,
 *                                        pids, pids_peak, pids_limit,
 *                                        cpu_ms, disk_used_bytes,
 *                                        disk_limit_bytes, execs_running,
 *                                        background_execs_running}
 *             a live sandbox's use now, read from its cgroup and its
 *             tmpfs when asked (a peak is since creation; where the
 *             kernel keeps none, cgroup v2 before memory.peak or
 *             pids.peak, it is the current figure).  Like status it
 *             counts as naming the sandbox (idle_s starts again).
 *             Errors: not_found, ended (with end_reason), busy (being
 *             destroyed), internal (a figure that cannot be read).
 *
 * Any request may carry "request_id" (string, at most VSB_MAX_ID_LEN
 * bytes); the reply echoes it.
 *
 *   snapshot_create {tenant, agent, id, ttl_s?, metadata?,
 *              max_snapshots?, max_bytes?}
 *                                   -> {snapshot: SNAPSHOT}
 *             saves the sandbox's files: its own layer (a directory
 *             profile's whole root; an image profile's or a fork's
 *             writable upper layer, whiteouts and opaque directories
 *             included) merged over the snapshot it was forked from; no
 *             process, no /proc, no mount.  The reply comes once it is
 *             committed to the store (a worker copies, the helper serves
 *             others meanwhile).  Files are copied as they are read:
 *             pause the sandbox first for a consistent one.  Never a
 *             link followed (symlinks kept as symlinks), modes and inside
 *             owners kept, sockets skipped, any device node refused
 *             (unsupported_file, field "path"); hard links are copied
 *             apart.  ttl_s: 1 .. snapshot_max_ttl_s (over_ceiling, limit
 *             "snapshot_ttl_s"), default snapshot_default_ttl_s.
 *             max_snapshots, max_bytes: the tenant's quotas as the
 *             caller's policy has them, at most the config's
 *             snapshot_max_count and snapshot_max_bytes (over_ceiling,
 *             limits "snapshots", "snapshot_bytes"), those by default.
 *             Errors: over_ceiling (limit "snapshots": the tenant keeps
 *             that many already, counting those being made;
 *             "snapshot_bytes": the tenant's snapshots with this one would
 *             hold more; "snapshot_files": more than snapshot_max_files
 *             entries; "snapshot_depth"), unsupported_file, io_error (a
 *             file changed while read: pause first), no_space (the
 *             store's file system), busy (limit "snapshots": a snapshot or
 *             changes of this sandbox is being made).
 *   snapshot_list {tenant, agent?}  -> {snapshots: [SNAPSHOT...],
 *                                       tenant_snapshots, tenant_bytes}
 *             the owner's (agent absent: the tenant's) snapshots; each
 *             with its metadata while the list's come to at most
 *             VSB_LIST_METADATA_BYTES, then "metadata_omitted": true; as
 *             many as fit VSB_MAX_JSON ("truncated": true when some were
 *             left out; tenant_snapshots counts them all).
 *   snapshot_get {tenant, agent, snapshot, manifest?}
 *                                   -> {snapshot: SNAPSHOT,
 *                                       manifest_len?}
 *             manifest: true: reply payload = the manifest, JSON
 *             {"version": 1, "entries": [{path, type ("file"|"dir"|
 *             "symlink"|"fifo"|"whiteout"), mode, uid, gid, size,
 *             sha256? (files), target? (symlinks), opaque? (dirs)}...]}
 *             sorted by path; at most max_file_bytes (file_too_large,
 *             limit "file_bytes").
 *   snapshot_delete {tenant, agent, snapshot}
 *                                   -> {snapshot, deleted: true,
 *                                       confirmed: {files: true}}
 *             gone from the store at once, the reply once its files are
 *             confirmed gone (else termination_failed, step "files").
 *             busy (limit "forks") while a live sandbox is forked from it.
 *   pause     {tenant, agent, id}   -> {id, paused: true, ms}
 *   resume    {tenant, agent, id}   -> {id, paused: false, ms}
 *             freezes (thaws) every process of the sandbox through its
 *             cgroup (v2 cgroup.freeze, v1 freezer); the reply once the
 *             kernel says all are frozen (thawed), timed_out (limit
 *             "freeze") after 5 s: then it is thawed again.  Twice is
 *             the same as once.  While paused, exec (all kinds),
 *             write_file, read_file and the archive ops answer paused
 *             (field "id"); status ("paused": true), usage,
 *             snapshot_create, changes, the exec_* ops and destroy work.
 *             Its ttl_s runs on; idle_s never ends a paused sandbox and
 *             counts again from resume; a running exec's timeout_s runs
 *             on (on v1 a killed exec ends at resume).
 *   changes   {tenant, agent, id, since? ("created"|snapshot id),
 *              format? ("json"|"diff"|"tar"), max_bytes?
 *              (max_file_bytes)}
 *                                   -> {since, format, added, modified,
 *                                       deleted, mode_changed, changes,
 *                                       bytes}
 *             what differs between the sandbox's files now and at the end
 *             of its create (or a snapshot of the same image of the
 *             owner's), computed by the helper from the files, never by
 *             running anything in the sandbox: each path resolved in both
 *             as overlayfs would, compared by type, content (sha256; a
 *             symlink's target) and mode; times never count.  Reply
 *             payload, at most max_bytes (file_too_large, limit
 *             "changes_bytes"):
 *               json: {"changes": [CHANGE...]} sorted by path
 *               diff: unified diffs of the changed text files (a file
 *                     with a NUL byte is named "Binary files ... differ",
 *                     one over 1 MiB as not diffed, one whose content at
 *                     create is not kept as not diffed)
 *               tar:  ustar (pax for long names) of the added, modified
 *                     and mode-changed entries as they are now, owners as
 *                     inside, mtime 0; deletions are not in it (json)
 *             The bytes are the workload's: untrusted, like any export.
 *             Errors: not_found (field "since"), bad_value (field
 *             "since": a snapshot of another image), busy (limit
 *             "snapshots"), io_error, over_ceiling (limit
 *             "snapshot_files").
 *   clock_advance {seconds}         -> {advanced_s, offset_s, now}
 *             the test clock: only with "test_clock = on" in the
 *             helper's configuration (a test setting; the helper logs a
 *             warning at start when it is on), otherwise not_enabled and
 *             nothing moves.  Moves the lifetime clock seconds (1 ..
 *             VSB_CLOCK_ADVANCE_MAX_S) ahead, at most
 *             VSB_CLOCK_OFFSET_MAX_S in all (bad_value past it), and runs
 *             the lifetime checks before the reply: a sandbox the new
 *             time puts past its ttl_s or idle_s is ending ("expired",
 *             "idle"; its ENDED record follows once its termination is
 *             confirmed), ENDED records past their retention are gone.
 *             The lifetime clock is what ttl_s, idle_s and
 *             ended_retention_s are counted on and what created_at,
 *             expires_at, active_at, ended_at and retained_until report;
 *             nothing else moves (exec timeouts, destroy bounds, freeze
 *             waits, an exec's own times, snapshots' retention).
 *             offset_s: how far ahead in all; now: the lifetime clock's
 *             unix seconds.  The offset is the run's: a restarted helper
 *             counts from the real time again (what was made ahead keeps
 *             its times).  The schema is checked first (unknown_field,
 *             missing_field, bad_type, bad_value), then test_clock.
 *   create's from_snapshot: "snap-..." of the owner: the new sandbox's
 *             root is an overlay of its own upper layer (on its tmpfs of
 *             disk_mb) over the snapshot's tree (read-only, idmapped to
 *             its uids) over the profile's image; forks never see each
 *             other's writes.  Its profile is the snapshot's (a
 *             "profile" naming another is bad_value); limits, network,
 *             ttl_s, idle_s, env, metadata are the request's.  Errors:
 *             not_found (field "from_snapshot"), snapshot_profile_gone
 *             (field "from_snapshot": the snapshot's profile no longer
 *             exists, or its image is another now), profile_unavailable,
 *             unavailable (field "from_snapshot": the store's file system
 *             cannot be mounted idmapped, e.g. a tmpfs before Linux 6.3;
 *             found at start and logged; snapshots still work).
 *   SNAPSHOT = {id: "snap-" + 24 hex, digest: "sha256:" + the sha256 of
 *              its manifest, tenant, agent, sandbox (made of), profile,
 *              image_digest|null (the profile's image; null for a
 *              directory profile), created_at, expires_at, ttl_s, bytes
 *              (files' content), files (manifest entries), forks (live
 *              sandboxes made of it), metadata?}
 *   CHANGE  = {path, change: "added"|"modified"|"deleted"|"mode_changed",
 *              type, mode, size, sha256? (files), target? (symlinks):
 *              the entry now (deleted: as it was); modified and
 *              mode_changed also old_type, old_mode, old_size,
 *              old_sha256?, old_target?}
 *   SANDBOX = {id, epoch: EPOCH, tenant, agent, profile,
 *              profile_digest: "sha256:<64 hex>"|null (the image the
 *              sandbox's root is made of; null: a directory profile),
 *              state: "ready"|"destroying",
 *              ending?: END (while destroying: why),
 *              paused: bool (pause), from_snapshot: "snap-..."|null
 *              (the snapshot it was forked from),
 *              network: "none" | NETWORK ("allowlist" in list replies),
 *              limits: LIMITS, ttl_s, idle_s,
 *              created_at, expires_at, active_at (the last request or
 *              exec end: idle since then unless execs_running > 0)
 *              (unix seconds), execs_running, metadata?,
 *              usage?: {memory_bytes, pids, disk_used_bytes} (status)}
 *   ENDED   = {id, epoch (of the run that created it), tenant, agent,
 *              profile, profile_digest, state: "ended", end_reason: END,
 *              limit? (killed_by_limit: "memory"),
 *              step? (termination_failed: "processes"|"cgroups"|
 *                "network"|"mounts"|"files", the first not confirmed),
 *              cause? (termination_failed: the END it was for),
 *              detail? (<= 256 bytes: what happened, in words),
 *              created_at, ttl_s, idle_s, expires_at,
 *              ended_at (unix seconds: termination confirmed, or found
 *              failed), termination_ms (from the end's start),
 *              retained_until (unix seconds; then status says
 *              not_found), confirmed: {processes, cgroups, network,
 *              mounts, files: bool}, seq: SEQ}
 *             at most VSB_MAX_ENDED_JSON bytes.  Kept by the helper in
 *             state_dir/ended/<id>.json (written atomically) for
 *             ended_retention_s, at most ended_max of them (the oldest
 *             go first); a termination_failed one stays while its
 *             sandbox does (destroy retries it).
 *   END     = "deleted" (destroy) | "admin" (destroy, reason "admin") |
 *             "expired" (its ttl_s) | "idle" (its idle_s) |
 *             "killed_by_limit" (with limit: "memory": after the OOM
 *             killer ended an exec, the sandbox's files alone held its
 *             memory limit, so nothing could run in it again) |
 *             "helper_restart" (the helper stopped, or a crashed run
 *             left it and the next run ended it) |
 *             "termination_failed" (with step and cause)
 *   SEQ     = an integer, growing with each ENDED record of a run
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
 *   RESULT  = {exit_code: int|null, signal: int|null,
 *              timed_out, oom_killed: bool,
 *              limits_hit: ["memory"?, "pids"?] (the sandbox limits it
 *                ran into: an OOM kill, a fork the pids limit refused),
 *              stdout_bytes, stderr_bytes (written by the workload),
 *              stdout_dropped_bytes, stderr_dropped_bytes (left out
 *                between head and tail: *_bytes - *_len),
 *              stdout_truncated, stderr_truncated (dropped > 0),
 *              usage: {cpu_ms, wall_ms, peak_memory_bytes, peak_pids},
 *              refused_syscalls: [{nr, name|null,
 *                errno: "EPERM"|"ENOSYS", count}] (<= 16 entries),
 *              refused_syscalls_total,
 *              network: "none" | ATTEMPTS}
 *             Head and tail: each stream keeps its first
 *             ceil(output_bytes / 2) and its last floor(output_bytes / 2)
 *             bytes; when something was left out, the head ends after
 *             its last newline and the tail starts after its first when
 *             that costs at most half of either (a long line is kept as
 *             it is).
 *   EXEC    = {id: "ex-" + 16 hex, state: "running"|"exited"|"timed_out"|
 *              "killed"|"failed", started_at, ended_at|null,
 *              output_bytes (retained per stream), stdout_bytes,
 *              stderr_bytes, stdout_dropped_bytes, stderr_dropped_bytes
 *              (so far), result: null while running, then RESULT (without
 *              *_len) + {killed: bool, error?, detail? (failed)}}
 *             A background exec's output is retained head and tail as
 *             above, without line cuts, in files of the sandbox's own
 *             disk (counted against disk_mb; when it is full, retention
 *             stops and the rest counts as dropped).  At most
 *             max_background_execs run per sandbox (busy, limit
 *             "background_execs"), each also one of
 *             max_execs_per_sandbox; as many ended ones are kept, the
 *             oldest forgotten (files and all) when a newer one ends;
 *             all go with the sandbox.  Its deadline is timeout_s as for
 *             any exec.
 *   EPOCH   = VSB_EPOCH_LEN lowercase hex digits, random, made when the
 *             helper starts.  A SANDBOX carries the epoch of the helper
 *             run that created it.  Sandboxes never outlive their helper
 *             (a restart ends whatever a previous run left, reading the
 *             state file each live sandbox has in state_dir/run, and
 *             records END "helper_restart" for each), so a client
 *             holding a sandbox whose epoch differs from the epoch ping
 *             reports now knows that sandbox is gone.
 *             Every op naming a sandbox by "id" also takes an optional
 *             "epoch" (EPOCH): one that is not this run's is refused
 *             with epoch_mismatch before anything is done.
 *
 * tenant, agent: 1 .. VSB_MAX_ID_LEN bytes of printable ASCII (0x21-0x7e).
 * id: "sb-" followed by 24 lowercase hex digits.
 * exec: "ex-" followed by 16 lowercase hex digits.
 * path: relative to the workspace ("src/a.c") or absolute under it
 * ("/workspace/src/a.c"); replies name it in the relative form.  At most
 * VSB_MAX_PATH bytes, components at most 255 bytes, no "..", no ".", no
 * empty component, no control character, no NUL (bad_path, field
 * "path").  Archive ops also take "/workspace", "/workspace/" or "." for
 * the workspace itself (r->path "").
 * cwd: absolute inside the sandbox (as it is), or relative to
 * /workspace under the path rules (bad_path, field "cwd"); default
 * "/workspace".
 * env: object of string values; names match [A-Za-z_][A-Za-z0-9_]*.
 * Every sandbox belongs to the (tenant, agent) that created it; any op
 * naming it with another owner answers not_found, exactly as an unknown
 * id does.  Any op but status naming a sandbox that has ended (within
 * its retention) answers ended, with "end_reason" (END) and a detail
 * saying when; a sandbox being destroyed answers busy.  not_found names its field: "id" for a sandbox, "path" for a
 * file of an existing sandbox (read_file).
 * paused (exec, write_file, read_file, archives; field "id"): the
 * sandbox is paused; resume it first.
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
#define VSB_MAX_STREAM_PAYLOAD    4294967295U
/* an event frame's payload, at most */
#define VSB_STREAM_CHUNK          65536
/* event bytes queued per connection before the helper waits for the
 * client to read them */
#define VSB_STREAM_WINDOW         (2 * VSB_STREAM_CHUNK)

#define VSB_MAX_ID_LEN            128
#define VSB_SANDBOX_ID_LEN        27          /* "sb-" + 24 hex */
#define VSB_EXEC_ID_LEN           19          /* "ex-" + 16 hex */
#define VSB_EPOCH_LEN             32          /* hex digits */
#define VSB_MAX_PATH              4096
#define VSB_MAX_NAME              255
#define VSB_MAX_ARGV              1024
#define VSB_MAX_ENV               256
#define VSB_MAX_METADATA_JSON     4096
#define VSB_LIST_METADATA_BYTES   (16 * 1024)   /* all of a list's */
#define VSB_MAX_NETWORK_ENTRY     300         /* one allowlist entry */
#define VSB_MAX_NETWORK_BYTES     8192        /* allow + ask entries */
#define VSB_MAX_EXEC_NETWORK_BYTES 16384      /* an exec's attempts */
#define VSB_MAX_ENDED_JSON        2048        /* one ENDED record */
#define VSB_MAX_ENDED_LIST        49152       /* ENDED records in a reply */
#define VSB_ENDED_PAGE            16          /* ended: records by default */
#define VSB_ENDED_PAGE_MAX        64
#define VSB_SNAPSHOT_ID_LEN       29          /* "snap-" + 24 hex */
#define VSB_CLOCK_ADVANCE_MAX_S   (31 * 24 * 3600)  /* clock_advance, once */
#define VSB_CLOCK_OFFSET_MAX_S    (10 * 366 * 24 * 3600)  /* and in all */

/*
 * Ops: the name a request's "op" holds, and VSB_OPS, every op once.  The
 * helper's op table is made of VSB_OPS (ops.c): an op listed here whose
 * row, vsb_<op>_op next to its handler, is not defined fails to link,
 * and a row whose name is not VSB_OP_<OP> stops the helper at start.
 * The gateway checks at configuration that every helper op its op table
 * names is listed here.
 */
#define VSB_OPS(X)                                                          \
    X(ping) X(create) X(status) X(list) X(exec) X(write_file)               \
    X(read_file) X(destroy) X(update_network) X(profiles) X(exec_status)    \
    X(exec_output) X(exec_kill) X(extract_archive) X(export_archive)        \
    X(stats) X(update_lifetime) X(ended) X(usage) X(snapshot_create)     \
    X(snapshot_list) X(snapshot_get) X(snapshot_delete) X(pause)            \
    X(resume) X(changes) X(clock_advance)

/*
 * The ops answered at once: the helper replies while it handles the
 * frame (no reply later, no event frame, no payload either way), so a
 * client may pipeline them and have their replies in one write
 * (docs/helper-protocol.md, "Pipelining").  The other ops may answer
 * later (a process, a worker, the egress proxy) or carry a payload.  The
 * helper logs, as a bug, an op listed here whose handler returned
 * without a reply (ops.c); the nginx module pipelines exactly these
 * (its _pipe.c).  Each is an op of VSB_OPS (ops.c fails to link
 * otherwise).
 */
#define VSB_OPS_AT_ONCE(X)                                                  \
    X(ping) X(status) X(list) X(profiles) X(exec_status) X(stats)          \
    X(ended) X(usage)

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
#define VSB_OP_STATS              "stats"
#define VSB_OP_UPDATE_LIFETIME    "update_lifetime"
#define VSB_OP_ENDED              "ended"
#define VSB_OP_USAGE              "usage"
#define VSB_OP_SNAPSHOT_CREATE    "snapshot_create"
#define VSB_OP_SNAPSHOT_LIST      "snapshot_list"
#define VSB_OP_SNAPSHOT_GET       "snapshot_get"
#define VSB_OP_SNAPSHOT_DELETE    "snapshot_delete"
#define VSB_OP_PAUSE              "pause"
#define VSB_OP_RESUME             "resume"
#define VSB_OP_CHANGES            "changes"
#define VSB_OP_CLOCK_ADVANCE      "clock_advance"

/* Event frames (no "ok"): "event" is one of these. */
#define VSB_EVENT_OUTPUT          "output"
#define VSB_EVENT_DATA            "data"

/* END reasons (ENDED's end_reason). */
#define VSB_END_DELETED           "deleted"
#define VSB_END_ADMIN             "admin"
#define VSB_END_EXPIRED           "expired"
#define VSB_END_IDLE              "idle"
#define VSB_END_KILLED_BY_LIMIT   "killed_by_limit"
#define VSB_END_HELPER_RESTART    "helper_restart"
#define VSB_END_TERMINATION_FAILED "termination_failed"

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
#define VSB_E_BAD_CWD             "bad_cwd"
#define VSB_E_TIMED_OUT           "timed_out"
#define VSB_E_FILE_TOO_LARGE      "file_too_large"
#define VSB_E_NO_SPACE            "no_space"
#define VSB_E_IO                  "io_error"
#define VSB_E_EXEC_FAILED         "exec_failed"
#define VSB_E_TERMINATION_FAILED  "termination_failed"
#define VSB_E_NOT_PERMITTED       "not_permitted"
#define VSB_E_UNAVAILABLE         "unavailable"
#define VSB_E_PROFILE_UNAVAILABLE "profile_unavailable"
#define VSB_E_CREDENTIAL_UNAVAILABLE "credential_unavailable"
#define VSB_E_ENDED               "ended"
#define VSB_E_EPOCH_MISMATCH      "epoch_mismatch"
#define VSB_E_UNSUPPORTED_FILE    "unsupported_file"
#define VSB_E_PAUSED              "paused"
#define VSB_E_SNAPSHOT_PROFILE    "snapshot_profile_gone"
#define VSB_E_NOT_ENABLED         "not_enabled"     /* clock_advance */
#define VSB_E_INTERNAL            "internal"

/* Limit names carried in "limit" with over_ceiling, and in LIMITS. */
#define VSB_LIMIT_MEMORY_MB       "memory_mb"
#define VSB_LIMIT_PIDS            "pids"
#define VSB_LIMIT_CPU_PERCENT     "cpu_percent"
#define VSB_LIMIT_DISK_MB         "disk_mb"
#define VSB_LIMIT_TIMEOUT_S       "timeout_s"
#define VSB_LIMIT_OUTPUT_BYTES    "output_bytes"
#define VSB_LIMIT_TTL_S           "ttl_s"
#define VSB_LIMIT_IDLE_S          "idle_s"
#define VSB_LIMIT_FILE_BYTES      "file_bytes"
#define VSB_LIMIT_SANDBOXES       "sandboxes"
#define VSB_LIMIT_NETWORK_ENTRIES "network_entries"
#define VSB_LIMIT_NETWORK_BYTES   "network_bytes"
#define VSB_LIMIT_ARCHIVE_BYTES   "archive_bytes"
#define VSB_LIMIT_EXECS           "execs"
#define VSB_LIMIT_BACKGROUND      "background_execs"
#define VSB_LIMIT_SNAPSHOTS       "snapshots"       /* a tenant's count */
#define VSB_LIMIT_SNAPSHOT_BYTES  "snapshot_bytes"  /* a tenant's bytes */
#define VSB_LIMIT_SNAPSHOT_FILES  "snapshot_files"  /* one snapshot's */
#define VSB_LIMIT_SNAPSHOT_TTL_S  "snapshot_ttl_s"
#define VSB_LIMIT_CHANGES_BYTES   "changes_bytes"   /* a changes reply */


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
