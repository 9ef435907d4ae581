/*
 * The profiles op: what a sandbox can be created from (vsb_profile.h).
 * The helper lists every configured profile; which of them a caller may
 * use is the gateway's policy.
 */
#include "vsb_op.h"
#include "vsb_profile.h"


static int
vsb_req_profiles(json_t *root, const vsb_config_t *cf, vsb_request_t *r,
    vsb_error_t *e)
{
    static const char *const  allowed[] = { "op", "request_id", NULL };

    return vsb_req_fields(root, allowed, VSB_OP_PROFILES, e);
}


static void
vsb_op_profiles(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len, vsb_error_t *e)
{
    json_t  *reply, *list;

    reply = vsb_ok(r->request_id);
    list = vsb_profiles_json();

    if (reply == NULL || list == NULL) {
        json_decref(reply);
        json_decref(list);
        vsb_error_set(e, VSB_E_INTERNAL, NULL, "out of memory");
        vsb_conn_reply_error(c, r->request_id, e);
        return;
    }

    json_object_set_new(reply, "profiles", list);
    vsb_conn_reply(c, reply, NULL, 0);
}


const vsb_op_t  vsb_profiles_op = {
    .name = VSB_OP_PROFILES,
    .payload = 0,
    .while_stopping = 1,
    .parse = vsb_req_profiles,
    .handler = vsb_op_profiles,
};
