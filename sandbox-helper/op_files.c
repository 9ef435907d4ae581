/*
 * The file ops, write_file and read_file: schemas and handlers.  The
 * file work itself, as the sandbox's user, is files.c.
 */
#include <stdlib.h>
#include <string.h>

#include "vsb_files.h"
#include "vsb_op.h"


static int
vsb_req_file(json_t *root, int write, vsb_request_t *r, vsb_error_t *e)
{
    static const char *const  allowed_w[] = {
        "op", "request_id", "tenant", "agent", "id", "epoch", "path",
        "mode", NULL
    };
    static const char *const  allowed_r[] = {
        "op", "request_id", "tenant", "agent", "id", "epoch", "path", NULL
    };
    json_t  *m;

    /* "src/a.c" and "/workspace/src/a.c" name the same file */
    if (vsb_req_sandbox_ref(root, write ? allowed_w : allowed_r,
                            write ? "write_file" : "read_file", r, e) != 0
        || vsb_req_ws_path(root, "path", 1, 0, r, e) != 0)
    {
        return -1;
    }

    r->mode = 0644;
    m = json_object_get(root, "mode");
    if (m != NULL) {
        if (!json_is_integer(m)) {
            return vsb_error_set(e, VSB_E_BAD_TYPE, "mode",
                                 "\"mode\" must be an integer");
        }
        if (json_integer_value(m) < 0 || json_integer_value(m) > 0777) {
            return vsb_error_set(e, VSB_E_BAD_VALUE, "mode",
                                 "\"mode\" must be 0 .. 0777 (511): "
                                 "setuid, setgid and sticky bits are "
                                 "refused");
        }
        r->mode = (unsigned) json_integer_value(m);
    }

    return 0;
}


static int
vsb_req_write_file(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    return vsb_req_file(root, 1, r, e);
}


static int
vsb_req_read_file(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    return vsb_req_file(root, 0, r, e);
}


static void
vsb_op_write_file(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_sandbox_t  *sb;
    char            sha[VSB_SHA256_HEX_LEN + 1];
    json_t         *reply;

    sb = vsb_find_running(r, e);
    if (sb == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (payload_len > vsb_cf.max_file_bytes) {
        vsb_error_set(e, VSB_E_FILE_TOO_LARGE, NULL,
                      "%zu bytes exceed max_file_bytes %llu", payload_len,
                      (unsigned long long) vsb_cf.max_file_bytes);
        e->limit = VSB_LIMIT_FILE_BYTES;
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (vsb_files_write(sb, r->path, r->mode, payload, payload_len, sha, e)
        != 0)
    {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    reply = vsb_ok(r->request_id);
    if (reply != NULL) {
        json_object_set_new(reply, "path", json_string(r->path));
        json_object_set_new(reply, "size", json_integer((json_int_t)
                                                        payload_len));
        json_object_set_new(reply, "sha256", json_string(sha));
    }

    vsb_conn_reply(c, reply, NULL, 0);
}


const vsb_op_t  vsb_write_file_op = {
    .name = VSB_OP_WRITE_FILE,
    .payload = 1,
    .while_stopping = 0,
    .parse = vsb_req_write_file,
    .handler = vsb_op_write_file,
};


static void
vsb_op_read_file(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_sandbox_t  *sb;
    char            sha[VSB_SHA256_HEX_LEN + 1];
    unsigned char  *data;
    size_t          len;
    json_t         *reply;

    sb = vsb_find_running(r, e);
    if (sb == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    if (vsb_files_read(sb, r->path, vsb_cf.max_file_bytes, &data, &len, sha,
                       e) != 0)
    {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    /* replies nobody reads must not pile up without bound */
    if (!vsb_server_can_buffer(len)) {
        free(data);
        vsb_error_set(e, VSB_E_BUSY, NULL, "the helper is buffering too "
                      "many replies; retry later");
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    reply = vsb_ok(r->request_id);
    if (reply != NULL) {
        json_object_set_new(reply, "path", json_string(r->path));
        json_object_set_new(reply, "size", json_integer((json_int_t) len));
        json_object_set_new(reply, "sha256", json_string(sha));
    }

    vsb_conn_reply(c, reply, data, len);
}


const vsb_op_t  vsb_read_file_op = {
    .name = VSB_OP_READ_FILE,
    .payload = 0,
    .while_stopping = 0,
    .parse = vsb_req_read_file,
    .handler = vsb_op_read_file,
};
