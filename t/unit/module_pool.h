/*
 * The fixture of the module's unit tests that allocate: "pool", a fresh
 * pool for each test (the stub's, ngx_core_stub.c: every allocation its
 * own malloc(), so ASan checks each and LeakSanitizer sees what
 * destroying the pool would not free).  A test names pool_setup and
 * pool_teardown in its cmocka_unit_test_setup_teardown().
 */

#ifndef _MODULE_POOL_H_INCLUDED_
#define _MODULE_POOL_H_INCLUDED_


#include "ngx_core_stub.h"


static ngx_pool_t  *pool;


static int
pool_setup(void **state)
{
    pool = ngx_create_pool(1024, ngx_stub_init());
    return pool == NULL;
}


static int
pool_teardown(void **state)
{
    ngx_destroy_pool(pool);
    return 0;
}


#endif /* _MODULE_POOL_H_INCLUDED_ */
