/*
 * Credentials in the helper (docs/security.md "Credentials"): the
 * helper reads the operator's bindings (never the secret values, which
 * only the egress proxy loads), checks the names a create or an
 * update_network attaches, makes each attachment's placeholder, and
 * gives the workload what it needs to use them:
 *
 *   - NAME's env variable = its placeholder ("veto-cred-" and 32 random
 *     hex digits; the proxy swaps in the real header on requests to the
 *     bound host, and refuses the placeholder anywhere else);
 *   - /etc/veto-egress-ca.pem: the system roots (egress_trust_roots)
 *     and the proxy's CA, named by SSL_CERT_FILE, NODE_EXTRA_CA_CERTS,
 *     REQUESTS_CA_BUNDLE, GIT_SSL_CAINFO and CURL_CA_BUNDLE.
 *
 * Attachments are JSON: [{"name", "placeholder"}...], kept in the
 * sandbox's egress state and sent with the proxy's add and update.
 *
 * An agent's own secret (update_network's "secret", docs/security.md
 * "Credentials") is an attachment with its binding and value: {"name",
 * "placeholder", "value", "host", "header", "template", "env", "path"?}.
 * It lives in the helper's memory only (never in the state directory,
 * an ENDED record or a log), goes to the proxy with each add and update
 * (so a restarted proxy gets it again), and goes with the sandbox.
 * Nothing the helper answers holds the value (vsb_ecred_json).
 */
#ifndef VSB_EGRESS_CRED_H
#define VSB_EGRESS_CRED_H

#include <jansson.h>
#include <stddef.h>

#include "vsb_config.h"
#include "vsb_request.h"
#include "vsb_sandbox.h"

#define VSB_ECRED_BUNDLE_NAME  "veto-egress-ca.pem"     /* in the root's /etc */
#define VSB_ECRED_BUNDLE       "/etc/" VSB_ECRED_BUNDLE_NAME
#define VSB_ECRED_BUNDLE_MAX   (4 * 1024 * 1024)

/* At start: reads egress_credentials/bindings.  -1 with err: the helper
 * must not start. */
int vsb_ecred_init(const vsb_config_t *cf, char *err, size_t errlen);
int vsb_ecred_enabled(void);

/* Schema: an array of known credential names, none twice, none among
 * attached (an array of attachments, may be NULL), at most 16 in all. */
int vsb_ecred_req(json_t *names, const char *field, json_t *attached,
    vsb_error_t *e);
/* Appends an attachment with a fresh placeholder for each name.  -1 with
 * e. */
int vsb_ecred_attach(json_t *attached, json_t *names, vsb_error_t *e);
/* Schema of a detach: a non-empty array of credential names, none twice,
 * each among attached (not checked when attached is NULL).  -1 with e
 * (field "credentials_remove"). */
int vsb_ecred_detach_req(json_t *names, json_t *attached, vsb_error_t *e);
/* Drops the attachments of names from attached.  -1 with e. */
int vsb_ecred_detach(json_t *attached, json_t *names, vsb_error_t *e);

#define VSB_ECRED_AGENT_TEMPLATE  "Bearer {{secret}}"

/* Schema of update_network's "secret": {name, value, host, env, header?,
 * template?, path?}, the binding by the operator's rules
 * (eg_cred_binding_from), the value printable ASCII of 1 .. 4096 bytes,
 * the name none of the operator's.  -1 with e (never the value). */
int vsb_ecred_secret_req(json_t *secret, vsb_error_t *e);
/* Attaches the agent's secret (checked) to attached, or replaces the one
 * of that name (keeping its placeholder); its variable must be no other
 * attachment's.  -1 with e. */
int vsb_ecred_put(json_t *attached, json_t *secret, vsb_error_t *e);
/* Is name an agent's own secret among attached? */
int vsb_ecred_is_agent(json_t *attached, const char *name);

/* Writes the trust bundle into sb's root (at create).  -1 with e. */
int vsb_ecred_bundle(vsb_sandbox_t *sb, vsb_error_t *e);

/* "NAME=value" strings (NULL-terminated, malloc'd, vsb_ecred_env_free):
 * base, the CA variables, each attachment's variable. */
char **vsb_ecred_env(const char *const *base, json_t *attached);
void vsb_ecred_env_free(char **env);

/* The sandbox's view: [{name, host, header, env, path?}...]. */
json_t *vsb_ecred_json(json_t *attached);
/* Every binding, the same way (ping's "credentials"): what a reviewer is
 * shown of a secret a request attaches.  NULL on failure. */
json_t *vsb_ecred_bindings_json(void);

#endif
