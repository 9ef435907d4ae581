/*
 * THE OP TABLE: one row per operation of the API.  A row says everything
 * the module does differently for an operation (its
 * ngx_http_veto_sandbox_op_t fields); nothing else in the module asks
 * which operation a request is.  What can be derived from the rows is:
 * the policy's action names and their approval kinds
 * (_policy_approvals.c), routing and the Allow header (_op_route.c), the
 * check that docs/openapi.json describes every row and nothing else
 * (_op_route.c), the metrics' route labels.  The MCP endpoint's tools run
 * these same rows (_mcp_tools.c).  docs/adding-an-endpoint.md walks
 * through adding one.
 *
 * A row is made with ngx_http_vsb_op(), so a row missing a piece does not
 * compile, and ngx_http_veto_sandbox_ops_init() (_op_route.c) checks the
 * table when the configuration is read, so a piece that cannot work
 * fails "nginx -t".  Every row is in its op group's file, next to its
 * code (NGX_HTTP_VSB_OP_GROUPS, faces.h); this file assembles the table
 * they make, and nothing else: the unit tests link it, and the groups'
 * files, as data (NGX_HTTP_VSB_OPS_DATA_ONLY).
 */

#include "ngx_http_veto_sandbox_faces.h"


#define NGX_HTTP_VSB_OP_GROUP_ROWS(g)  ngx_http_veto_sandbox_##g##_ops,

static ngx_http_veto_sandbox_op_t  *ngx_http_veto_sandbox_op_groups[] = {
    NGX_HTTP_VSB_OP_GROUPS(NGX_HTTP_VSB_OP_GROUP_ROWS)
    NULL
};


/* the table, the groups' rows in NGX_HTTP_VSB_OP_GROUPS order; a zeroed
 * row ends it */
ngx_http_veto_sandbox_op_t  ngx_http_veto_sandbox_ops[NGX_HTTP_VSB_MAX_OPS + 1];


ngx_http_veto_sandbox_op_t *
ngx_http_veto_sandbox_ops_table(void)
{
    ngx_uint_t                    n;
    ngx_http_veto_sandbox_op_t   *op, **g;
    static ngx_uint_t             assembled;

    if (assembled) {
        return ngx_http_veto_sandbox_ops;
    }

    n = 0;

    for (g = ngx_http_veto_sandbox_op_groups; *g; g++) {
        for (op = *g; op->name.len; op++) {
            if (n == NGX_HTTP_VSB_MAX_OPS) {
                return NULL;
            }

            ngx_http_veto_sandbox_ops[n++] = *op;
        }
    }

    assembled = 1;

    return ngx_http_veto_sandbox_ops;
}
