/*
 * The stand-in for nginx's core (ngx_core_stub.c) that the module's unit
 * tests and fuzz targets link instead of nginx.
 */

#ifndef _NGX_CORE_STUB_H_INCLUDED_
#define _NGX_CORE_STUB_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>


/* ngx_cycle and its log; returns the log */
ngx_log_t *ngx_stub_init(void);

/* a configuration context whose pool is pool, as a directive gets */
void ngx_stub_conf(ngx_conf_t *cf, ngx_pool_t *pool);

/* the text of the last ngx_log_error() or ngx_conf_log_error() */
const char *ngx_stub_last_error(void);

/* forgets it: a refusal that logs nothing leaves the text empty */
void ngx_stub_clear_error(void);


#endif /* _NGX_CORE_STUB_H_INCLUDED_ */
