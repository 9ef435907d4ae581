/*
 * A shared memory zone's data, made once: what the zone init handlers of
 * the token cache, the MCP sessions, the metrics table and the webhook
 * counters share.  A reload's previous data stays each caller's to take
 * or refuse (its layout is the caller's to judge).  Then the keyed table
 * the token cache and the MCP sessions keep in such a zone.
 */

#include "ngx_http_veto_sandbox_base.h"


void *
ngx_http_veto_sandbox_shm_data(ngx_shm_zone_t *shm_zone, size_t size,
    const char *directive, ngx_uint_t *fresh)
{
    size_t            len;
    void             *data;
    ngx_slab_pool_t  *shpool;

    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;
    *fresh = 0;

    if (shm_zone->shm.exists) {
        /* a new binary (USR2) found the running one's zone */
        return shpool->data;
    }

    data = ngx_slab_calloc(shpool, size);
    if (data == NULL) {
        return NULL;
    }

    shpool->data = data;

    len = sizeof(" in  zone \"\"") + ngx_strlen(directive)
          + shm_zone->shm.name.len;

    shpool->log_ctx = ngx_slab_alloc(shpool, len);
    if (shpool->log_ctx == NULL) {
        return NULL;
    }

    ngx_sprintf(shpool->log_ctx, " in %s zone \"%V\"%Z", directive,
                &shm_zone->shm.name);

    /* each owner says what a full zone means (an eviction, a 503) */
    shpool->log_nomem = 0;

    *fresh = 1;

    return data;
}


/*
 * A keyed table in a shared memory zone, what the token cache and the MCP
 * sessions share: entries found by a byte string (a token's hash, a random
 * id) through a red-black tree and kept in order of use in a queue.  What
 * an entry holds beyond its key, when it is stale and what a full zone
 * means are each owner's (the cache evicts its coldest entry silently, the
 * sessions refuse a new one with 503).  The caller holds the pool's mutex
 * around every call below but the zone's setup.
 */

static void ngx_http_veto_sandbox_shm_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);


ngx_shm_zone_t *
ngx_http_veto_sandbox_shm_zone(ngx_conf_t *cf, ngx_str_t *directive,
    ngx_str_t *value, ngx_shm_zone_init_pt init, void *data)
{
    u_char          *p;
    ssize_t          size;
    ngx_str_t        name, s;
    ngx_shm_zone_t  *zone;

    name.data = value->data + sizeof("zone=") - 1;
    name.len = 0;
    size = NGX_ERROR;

    p = (u_char *) ngx_strlchr(name.data, value->data + value->len, ':');

    if (p != NULL) {
        name.len = p - name.data;

        s.data = p + 1;
        s.len = value->data + value->len - s.data;

        size = ngx_parse_size(&s);
    }

    if (name.len == 0 || size == NGX_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\": invalid zone \"%V\" (expected "
                           "zone=name:size)", directive, value);
        return NULL;
    }

    if (size < (ssize_t) (8 * ngx_pagesize)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\": zone \"%V\" is too small, at least %uz "
                           "bytes", directive, &name, 8 * ngx_pagesize);
        return NULL;
    }

    zone = ngx_shared_memory_add(cf, &name, size,
                                 &ngx_http_veto_sandbox_module);
    if (zone == NULL) {
        return NULL;
    }

    if (zone->data == NULL) {
        zone->init = init;
        zone->data = data;
        return zone;
    }

    /* the same name for the token cache and the MCP sessions: refused */
    if (zone->init != init) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\": zone \"%V\" is used for something else",
                           directive, &name);
        return NULL;
    }

    return zone;
}


ngx_int_t
ngx_http_veto_sandbox_shm_table_init(ngx_shm_zone_t *shm_zone, void *data,
    const char *directive)
{
    ngx_http_veto_sandbox_shm_table_t  *otable = data;

    ngx_uint_t                          fresh;
    ngx_http_veto_sandbox_shm_table_t  *table;

    table = shm_zone->data;

    if (otable) {
        /* a reload keeps the entries */
        table->sh = otable->sh;
        table->shpool = otable->shpool;
        return NGX_OK;
    }

    table->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;
    table->sh = ngx_http_veto_sandbox_shm_data(shm_zone,
                                   sizeof(ngx_http_veto_sandbox_shm_sh_t),
                                   directive, &fresh);
    if (table->sh == NULL) {
        return NGX_ERROR;
    }

    if (fresh) {
        ngx_rbtree_init(&table->sh->rbtree, &table->sh->sentinel,
                        ngx_http_veto_sandbox_shm_insert);
        ngx_queue_init(&table->sh->queue);
    }

    return NGX_OK;
}


static ngx_rbtree_key_t
ngx_http_veto_sandbox_shm_hash(u_char *key)
{
    return ((ngx_rbtree_key_t) key[0] << 24) | (key[1] << 16) | (key[2] << 8)
           | key[3];
}


/* equal tree keys: the key bytes decide (node->data holds their length,
 * the same for every entry of a table) */
static void
ngx_http_veto_sandbox_shm_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t  **p;

    for ( ;; ) {

        if (node->key < temp->key) {
            p = &temp->left;

        } else if (node->key > temp->key) {
            p = &temp->right;

        } else {
            p = ngx_memcmp(ngx_http_veto_sandbox_shm_key(node),
                           ngx_http_veto_sandbox_shm_key(temp), node->data)
                < 0 ? &temp->left : &temp->right;
        }

        if (*p == sentinel) {
            break;
        }

        temp = *p;
    }

    *p = node;
    node->parent = temp;
    node->left = sentinel;
    node->right = sentinel;
    ngx_rbt_red(node);
}


ngx_http_veto_sandbox_shm_entry_t *
ngx_http_veto_sandbox_shm_find(ngx_http_veto_sandbox_shm_table_t *table,
    u_char *key, size_t len)
{
    ngx_int_t           rc;
    ngx_rbtree_key_t    hash;
    ngx_rbtree_node_t  *node, *sentinel;

    hash = ngx_http_veto_sandbox_shm_hash(key);

    node = table->sh->rbtree.root;
    sentinel = table->sh->rbtree.sentinel;

    while (node != sentinel) {

        if (hash != node->key) {
            node = hash < node->key ? node->left : node->right;
            continue;
        }

        rc = ngx_memcmp(key, ngx_http_veto_sandbox_shm_key(node), len);

        if (rc == 0) {
            return (ngx_http_veto_sandbox_shm_entry_t *) node;
        }

        node = rc < 0 ? node->left : node->right;
    }

    return NULL;
}


void
ngx_http_veto_sandbox_shm_add(ngx_http_veto_sandbox_shm_table_t *table,
    ngx_http_veto_sandbox_shm_entry_t *e, size_t len)
{
    e->node.key = ngx_http_veto_sandbox_shm_hash(
                                        ngx_http_veto_sandbox_shm_key(e));
    e->node.data = (u_char) len;

    ngx_rbtree_insert(&table->sh->rbtree, &e->node);
    ngx_queue_insert_head(&table->sh->queue, &e->queue);
    table->sh->count++;
}


void
ngx_http_veto_sandbox_shm_used(ngx_http_veto_sandbox_shm_table_t *table,
    ngx_http_veto_sandbox_shm_entry_t *e)
{
    ngx_queue_remove(&e->queue);
    ngx_queue_insert_head(&table->sh->queue, &e->queue);
}


ngx_http_veto_sandbox_shm_entry_t *
ngx_http_veto_sandbox_shm_coldest(ngx_http_veto_sandbox_shm_table_t *table)
{
    if (ngx_queue_empty(&table->sh->queue)) {
        return NULL;
    }

    return ngx_queue_data(ngx_queue_last(&table->sh->queue),
                          ngx_http_veto_sandbox_shm_entry_t, queue);
}


void
ngx_http_veto_sandbox_shm_delete(ngx_http_veto_sandbox_shm_table_t *table,
    ngx_http_veto_sandbox_shm_entry_t *e)
{
    ngx_queue_remove(&e->queue);
    ngx_rbtree_delete(&table->sh->rbtree, &e->node);
    ngx_slab_free_locked(table->shpool, e);
    table->sh->count--;
}
