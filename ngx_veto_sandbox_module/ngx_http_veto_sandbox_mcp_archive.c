/*
 * The upload_archive tool: a tar (plain, gzip, zstd, xz) as base64,
 * extracted under a directory of the workspace.  Its twin is the REST
 * upload, PUT /v1/sandboxes/{id}/archive?path=&format= with the decoded
 * bytes as the body (_archive.c): the same op row, so the same scope,
 * approval kind (a file write), request hash, archive bound
 * (archive_bytes) and record.  The archive is parsed by the profile's
 * tar inside the sandbox, never here: what tar refuses ("..", links out,
 * devices) comes back as the REST API's bad_archive, a tool error.
 *
 * Its size is bounded twice before anything is decoded: the JSON-RPC
 * message by veto_sandbox_mcp_max_body (_mcp.c), the decoded bytes by
 * the policy's archive_bytes (the builder).
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_mcp.h"


static const char  *ngx_http_veto_sandbox_mcp_archive_args[] = {
    "sandbox_id", "content", "path", "format", "approval_id", NULL
};

static const char  *ngx_http_veto_sandbox_mcp_archive_formats[] = {
    "tar", "tar.gz", "tar.zst", "tar.xz", NULL
};


/* upload_archive: PUT /v1/sandboxes/{id}/archive[?path=][&format=] */
ngx_int_t
ngx_http_veto_sandbox_mcp_twin_archive(ngx_http_request_t *r, json_t *args,
    ngx_http_veto_sandbox_mcp_twin_t *twin, const char **why)
{
    u_char      *p;
    json_t      *v, *f;
    ngx_int_t    rc;
    ngx_str_t    src, query;
    ngx_uint_t   i;

    rc = ngx_http_veto_sandbox_mcp_sandbox_twin(r, args,
                                   ngx_http_veto_sandbox_mcp_archive_args,
                                   NGX_HTTP_PUT, "PUT", "/archive", twin, why);
    if (rc != NGX_OK) {
        return rc;
    }

    /* no path: the workspace itself, as a REST client with no ?path= */
    ngx_str_null(&query);

    if (json_object_get(args, "path") != NULL) {
        rc = ngx_http_veto_sandbox_mcp_query(r, args, &query, why);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    f = json_object_get(args, "format");

    if (f != NULL) {
        for (i = 0; ngx_http_veto_sandbox_mcp_archive_formats[i]; i++) {
            if (json_is_string(f)
                && ngx_strcmp(json_string_value(f),
                              ngx_http_veto_sandbox_mcp_archive_formats[i])
                   == 0)
            {
                break;
            }
        }

        if (ngx_http_veto_sandbox_mcp_archive_formats[i] == NULL) {
            *why = "format must be \"tar\", \"tar.gz\", \"tar.zst\" or "
                   "\"tar.xz\" (or left out: told by the archive's first "
                   "bytes)";
            return NGX_DECLINED;
        }

        p = ngx_pnalloc(r->pool, query.len + sizeof("&format=tar.zst"));
        if (p == NULL) {
            return NGX_ERROR;
        }

        twin->args.data = p;
        if (query.len) {
            /* no path: query.data may be NULL (memcpy from NULL: UB) */
            p = ngx_cpymem(p, query.data, query.len);
        }
        p = ngx_sprintf(p, "%sformat=%s", query.len ? "&" : "",
                        json_string_value(f));
        twin->args.len = p - twin->args.data;

    } else {
        twin->args = query;
    }

    v = json_object_get(args, "content");

    if (!json_is_string(v) || json_string_length(v) == 0) {
        *why = "content is required: the archive (tar, tar.gz, tar.zst or "
               "tar.xz) as base64";
        return NGX_DECLINED;
    }

    src.data = (u_char *) json_string_value(v);
    src.len = json_string_length(v);

    twin->body.data = ngx_pnalloc(r->pool,
                                  ngx_base64_decoded_length(src.len) + 1);
    if (twin->body.data == NULL) {
        return NGX_ERROR;
    }

    if (ngx_decode_base64(&twin->body, &src) != NGX_OK
        || twin->body.len == 0)
    {
        *why = "content is not valid base64 (RFC 4648: A-Z a-z 0-9 + /, "
               "padded with =): send the archive's bytes base64-encoded";
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/* upload_archive: {path, format, size, sha256, stderr?} */
ngx_int_t
ngx_http_veto_sandbox_mcp_present_archive(ngx_http_request_t *r,
    ngx_http_veto_sandbox_mcp_call_t *call, json_t *rest, u_char *data,
    size_t len, json_t *result)
{
    u_char      *text, *p, *last;
    size_t       size;
    json_t      *warn;
    const char  *path, *format, *sha;

    path = json_string_value(json_object_get(rest, "path"));
    format = json_string_value(json_object_get(rest, "format"));
    sha = json_string_value(json_object_get(rest, "sha256"));
    warn = json_object_get(rest, "stderr");

    size = VSB_MAX_PATH + 512
           + (json_is_string(warn) ? json_string_length(warn) : 0);

    text = ngx_pnalloc(r->pool, size);
    if (text == NULL) {
        return NGX_ERROR;
    }

    last = text + size;

    p = ngx_slprintf(text, last, "Extracted a %s archive of %L bytes "
                     "(sha256 %s) into %s%s of the sandbox's workspace.",
                     format ? format : "tar",
                     json_integer_value(json_object_get(rest, "size")),
                     sha ? sha : "?",
                     path && *path ? path : "the top",
                     path && *path ? "" : " level");

    if (json_is_string(warn) && json_string_length(warn)) {
        p = ngx_slprintf(p, last, " tar warned: %s", json_string_value(warn));
    }

    return ngx_http_veto_sandbox_mcp_text_rest(result, (char *) text,
                                               p - text, rest);
}
