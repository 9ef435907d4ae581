/*
 * A header list (a request's headers_in or headers_out) walked by name:
 * the one walk every file that reads a header by name uses.
 */

#include "ngx_http_veto_sandbox_base.h"


ngx_table_elt_t *
ngx_http_veto_sandbox_header_next(ngx_list_t *headers, const char *name,
    ngx_http_veto_sandbox_header_it_t *it)
{
    size_t            len;
    ngx_table_elt_t  *h;

    len = ngx_strlen(name);

    if (it->part == NULL) {
        it->part = &headers->part;
        it->i = 0;
    }

    for ( ;; ) {

        if (it->i >= it->part->nelts) {
            if (it->part->next == NULL) {
                return NULL;
            }

            it->part = it->part->next;
            it->i = 0;
            continue;
        }

        h = (ngx_table_elt_t *) it->part->elts + it->i++;

        if (h->hash && h->key.len == len
            && ngx_strncasecmp(h->key.data, (u_char *) name, len) == 0)
        {
            return h;
        }
    }
}


ngx_table_elt_t *
ngx_http_veto_sandbox_header_in(ngx_http_request_t *r, const char *name)
{
    ngx_http_veto_sandbox_header_it_t  it;

    it.part = NULL;

    return ngx_http_veto_sandbox_header_next(&r->headers_in.headers, name,
                                             &it);
}
