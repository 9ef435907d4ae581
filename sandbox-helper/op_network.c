/*
 * The update_network op: adds hosts to a live allowlist sandbox's
 * allowlist (the gateway sends it once a human approved them), and
 * attaches credentials ("credentials": names, vsb_egress_cred.h) or
 * detaches them ("credentials_remove": names it holds, the agent's own
 * secrets too), or attaches (or replaces) an agent's own secret
 * ("secret": vsb_ecred_secret_req; its value never in a reply or a
 * log line).  The proxy
 * applies the new state first; the reply comes once it did.
 */
#include <stdlib.h>
#include <string.h>

#include "vsb_egress.h"
#include "vsb_egress_cred.h"
#include "vsb_log.h"
#include "vsb_op.h"
#include "vsb_registry.h"


static int
vsb_req_update_network(json_t *root, const vsb_config_t *cf,
    vsb_request_t *r, vsb_error_t *e)
{
    static const char *const  allowed[] = {
        "op", "request_id", "tenant", "agent", "id", "epoch", "add",
        "credentials", "credentials_remove", "secret", NULL
    };
    json_t  *creds, *gone, *secret;

    if (vsb_req_sandbox_ref(root, allowed, VSB_OP_UPDATE_NETWORK, r, e) != 0
        || vsb_req_get(root, "add", 0, &r->network, e) != 0)
    {
        return -1;
    }
    creds = json_object_get(root, "credentials");
    gone = json_object_get(root, "credentials_remove");
    secret = json_object_get(root, "secret");
    if (r->network == NULL && creds == NULL && gone == NULL && secret == NULL)
    {
        return vsb_error_set(e, VSB_E_MISSING_FIELD, "add", "\"add\" (hosts), "
                             "\"credentials\" or \"credentials_remove\" "
                             "(names) or \"secret\" is required");
    }
    if (secret != NULL) {
        if (creds != NULL || gone != NULL || r->network != NULL) {
            return vsb_error_set(e, VSB_E_BAD_VALUE, "secret", "\"secret\" "
                                 "goes alone: an agent's secret is its own "
                                 "change");
        }
        return vsb_ecred_secret_req(secret, e);
    }
    if (gone != NULL && (creds != NULL || r->network != NULL)) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "credentials_remove",
                             "\"credentials_remove\" goes alone: a detach "
                             "is its own change");
    }
    /* the names' shape; that the sandbox holds them, with the sandbox */
    if (gone != NULL && vsb_ecred_detach_req(gone, NULL, e) != 0) {
        return -1;
    }
    if (creds != NULL) {
        if (!json_is_array(creds) || json_array_size(creds) == 0) {
            return vsb_error_set(e, VSB_E_BAD_VALUE, "credentials",
                                 "\"credentials\" names at least one "
                                 "credential");
        }
        if (vsb_ecred_req(creds, "credentials", NULL, e) != 0) {
            return -1;
        }
    }
    if (r->network == NULL) {
        return 0;
    }
    if (json_is_array(r->network) && json_array_size(r->network) == 0) {
        return vsb_error_set(e, VSB_E_BAD_VALUE, "add",
                             "\"add\" names no entry");
    }
    /* the sandbox's own entries count too: checked again by the handler */
    return vsb_egress_req_entries(r->network, "add", cf, 0, 0, e);
}


/* Same opening as vsb_create_served() (op_sandbox.c): kept apart because
 * a failed create destroys its sandbox, a failed update leaves it as it
 * was, and each replies with its own fields. */
static void
vsb_network_updated(vsb_sandbox_t *sb, void *data, const char *error,
    const char *detail)
{
    vsb_pending_t  *p = data;
    vsb_conn_t     *c = p->conn;
    vsb_error_t     e;
    json_t         *reply;

    if (c != NULL) {
        c->op = NULL;
        if (error != NULL) {
            memset(&e, 0, sizeof(e));
            vsb_error_set(&e, error, NULL, "%s", detail ? detail : error);
            vsb_conn_reply_error(c, vsb_pending_rid(p), &e);
        } else {
            reply = vsb_ok(vsb_pending_rid(p));
            if (reply != NULL) {
                json_object_set_new(reply, "id", json_string(sb->id));
                json_object_set_new(reply, "network",
                                    vsb_egress_sandbox_json(sb, 1));
                if (json_object_get(p->root, "add") != NULL) {
                    json_object_set(reply, "added",
                                    json_object_get(p->root, "add"));
                }
                if (json_object_get(p->root, "secret") != NULL) {
                    json_object_set(reply, "secret", json_object_get(
                        json_object_get(p->root, "secret"), "name"));
                }
                if (json_object_get(p->root, "credentials") != NULL) {
                    json_object_set(reply, "attached",
                                    json_object_get(p->root, "credentials"));
                }
                if (json_object_get(p->root, "credentials_remove") != NULL) {
                    json_object_set(reply, "detached",
                                    json_object_get(p->root,
                                                    "credentials_remove"));
                }
            }
            vsb_conn_reply(c, reply, NULL, 0);
        }
    }

    if (error == NULL) {
        vsb_log(VSB_LOG_INFO, "sandbox %s: network %s", sb->id,
                json_object_get(p->root, "credentials_remove") != NULL
                ? "credentials detached"
                : json_object_get(p->root, "secret") != NULL
                ? "an agent's secret attached" : "allowlist extended");
    } else {
        vsb_log(VSB_LOG_ERR, "sandbox %s: network update failed: %s",
                sb->id, detail ? detail : error);
    }
    vsb_pending_free(p);
}


static void
vsb_op_update_network(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    vsb_sandbox_t  *sb;
    vsb_pending_t  *p;

    sb = vsb_find_ready(r, e);
    if (sb == NULL) {
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    p = vsb_pending_new(VSB_PENDING_NETWORK, c, r->request_id);
    if (p == NULL) {
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }
    p->sb = sb;
    p->root = json_incref(root);

    if (vsb_egress_sandbox_allow(sb, r->network,
                                 json_object_get(root, "credentials"),
                                 json_object_get(root, "secret"),
                                 json_object_get(root, "credentials_remove"),
                                 vsb_network_updated, p, e) != 0)
    {
        vsb_pending_free(p);
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }
    c->op = p;
}


const vsb_op_t  vsb_update_network_op = {
    .name = VSB_OP_UPDATE_NETWORK,
    .payload = 0,
    .while_stopping = 0,
    .parse = vsb_req_update_network,
    .handler = vsb_op_update_network,
};
