# make install / make uninstall; included by the top-level Makefile.
# The Debian packages (debian/, scripts/build-debs.sh) install the helper
# side with "make install-helper" too, so both ways give the same files.
#
#   make install [DESTDIR=...] [PREFIX=/usr/local]   helper side + module
#   make install-helper     sandbox-helper, sandbox-helperctl,
#                           sandbox-imagectl, veto-token, the egress proxy
#                           the helper starts, config, systemd unit, sysusers
#   make install-module     the nginx module (built by scripts/build-module.sh),
#                           its modules-available snippet, enabled, and
#   make install-approval-page  the approval page and its nginx locations
#   make uninstall          removes what install put there, configs excepted
#
# Configuration files under $(SYSCONFDIR)/veto-sandbox are installed only
# when absent: an operator's edits are never overwritten.

PREFIX       ?= /usr/local
BINDIR       ?= $(PREFIX)/bin
SBINDIR      ?= $(PREFIX)/sbin
# programs the helper and its unit run: the egress proxy, the ready check
PKGLIBDIR    ?= $(PREFIX)/lib/veto-sandbox
DATADIR      ?= $(PREFIX)/share
MANDIR       ?= $(DATADIR)/man
DOCDIR       ?= $(DATADIR)/doc/veto-sandbox
SYSCONFDIR   ?= /etc
UNITDIR      ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR  ?= $(PREFIX)/lib/sysusers.d
# nginx's own directories (Debian's layout), not under PREFIX
NGINX_MODULES_DIR       ?= /usr/lib/nginx/modules
NGINX_MODULES_AVAILABLE ?= /usr/share/nginx/modules-available
NGINX_MODULES_ENABLED   ?= /etc/nginx/modules-enabled
# the nginx worker user: the helper's allowed_uids and socket_group
NGINX_USER   ?= www-data
MODULE_SO    ?= build-module/ngx_veto_sandbox_module.so
INSTALL      ?= install

VSB_SHARE     = $(DATADIR)/veto-sandbox
VSB_ETC       = $(SYSCONFDIR)/veto-sandbox
VSB_MOD_SO    = ngx_http_veto_sandbox_module.so
VSB_MOD_CONF  = mod-http-veto-sandbox.conf

# Paths in the unit, the ready script and the example site follow PREFIX
# and SYSCONFDIR.
VSB_PATHS_SED = -e 's|/usr/sbin/|$(SBINDIR)/|g' \
                -e 's|/usr/lib/veto-sandbox/|$(PKGLIBDIR)/|g' \
                -e 's|/etc/veto-sandbox/|$(VSB_ETC)/|g' \
                -e 's|/usr/share/veto-sandbox/|$(VSB_SHARE)/|g'

.PHONY: install install-helper install-module install-approval-page module \
        uninstall FORCE

FORCE:

install: install-helper install-module

# generated files follow make variables (NGINX_USER, PREFIX): always remade
$(BUILD)/sandbox-helper.conf: conf/sandbox-helper.conf FORCE
	@mkdir -p $(dir $@)
	sed -e 's/^allowed_uids = 0$$/# installed: nginx'"'"'s worker user added (built-in: 0)\nallowed_uids = 0 $(NGINX_USER)/' \
	    -e 's/^#socket_group = www-data$$/# installed: nginx'"'"'s worker group (built-in: root'"'"'s)\nsocket_group = $(NGINX_USER)/' \
	    -e 's|^#egress_proxy = .*$$|egress_proxy = $(PKGLIBDIR)/egress-proxy|' \
	    -e 's/^#egress_user = veto-egress$$/egress_user = veto-egress/' \
	    $< > $@.tmp
	@grep -q '^allowed_uids = 0 $(NGINX_USER)$$' $@.tmp \
	    && grep -q '^socket_group = $(NGINX_USER)$$' $@.tmp \
	    && grep -q '^egress_proxy = $(PKGLIBDIR)/egress-proxy$$' $@.tmp \
	    && grep -q '^egress_user = veto-egress$$' $@.tmp \
	    || { echo "install: conf/sandbox-helper.conf no longer has the" \
	              "allowed_uids/socket_group/egress_proxy/egress_user" \
	              "lines install.mk edits" >&2; \
	         rm -f $@.tmp; exit 1; }
	mv $@.tmp $@

install-helper: $(BUILD)/sandbox-helper $(BUILD)/sandbox-helperctl \
                $(BUILD)/sandbox-imagectl $(BUILD)/egress-proxy \
                $(BUILD)/veto-token \
                $(BUILD)/sandbox-helper.conf
	$(INSTALL) -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) \
	    $(DESTDIR)$(PKGLIBDIR) $(DESTDIR)$(VSB_ETC) $(DESTDIR)$(UNITDIR) \
	    $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(MANDIR)/man1 \
	    $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(DOCDIR)/examples
	$(INSTALL) -m 0755 $(BUILD)/sandbox-helper $(BUILD)/sandbox-helperctl \
	    $(BUILD)/sandbox-imagectl $(DESTDIR)$(SBINDIR)/
	$(INSTALL) -m 0755 $(BUILD)/veto-token $(DESTDIR)$(BINDIR)/
	$(INSTALL) -m 0755 $(BUILD)/egress-proxy $(DESTDIR)$(PKGLIBDIR)/
	sed $(VSB_PATHS_SED) tools/sandbox-helper-ready \
	    > $(DESTDIR)$(PKGLIBDIR)/sandbox-helper-ready
	chmod 0755 $(DESTDIR)$(PKGLIBDIR)/sandbox-helper-ready
	sed $(VSB_PATHS_SED) conf/veto-sandbox-helper.service \
	    > $(DESTDIR)$(UNITDIR)/veto-sandbox-helper.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/veto-sandbox-helper.service
	$(INSTALL) -m 0644 conf/veto-sandbox-helper.sysusers \
	    $(DESTDIR)$(SYSUSERSDIR)/veto-sandbox-helper.conf
	@t=$(DESTDIR)$(VSB_ETC)/sandbox-helper.conf; \
	if [ -e $$t ]; then echo "install: keeping $$t"; \
	else echo "$(INSTALL) -m 0644 $(BUILD)/sandbox-helper.conf $$t"; \
	     $(INSTALL) -m 0644 $(BUILD)/sandbox-helper.conf $$t; fi
	$(INSTALL) -m 0644 docs/man/sandbox-helper.8 \
	    docs/man/sandbox-helperctl.8 docs/man/sandbox-imagectl.8 \
	    $(DESTDIR)$(MANDIR)/man8/
	$(INSTALL) -m 0644 docs/man/veto-token.1 $(DESTDIR)$(MANDIR)/man1/
	$(INSTALL) -m 0644 conf/policy.example.json $(DESTDIR)$(DOCDIR)/examples/
	sed $(VSB_PATHS_SED) conf/veto-sandbox-site.conf \
	    > $(DESTDIR)$(DOCDIR)/examples/veto-sandbox-site.conf
	chmod 0644 $(DESTDIR)$(DOCDIR)/examples/veto-sandbox-site.conf

# The approval page's two locations, as conf/nginx-veto.conf.example has
# them (the block the tests serve the page with), for an "include" in the
# server that has location /v1/.
$(BUILD)/approval-page.conf: conf/nginx-veto.conf.example FORCE
	@mkdir -p $(dir $@)
	{ echo '# The Veto Sandbox approval page at /review/: include this file in'; \
	  echo '# the server that has "location /v1/ { veto_sandbox_api; }".'; \
	  sed -n '/^[ \t]*# BEGIN approval page$$/,/^[ \t]*# END approval page$$/p' $< \
	  | sed -e '1d' -e '$$d' -e 's/^    //' \
	        -e 's|^\([ \t]*alias[ \t]\{1,\}\)[^ \t;]\{1,\};|\1$(VSB_SHARE)/approval-page/;|'; \
	} > $@.tmp
	@grep -q '^[ \t]*alias[ \t]*$(VSB_SHARE)/approval-page/;$$' $@.tmp \
	    || { echo "install: no approval page block with an alias in" \
	              "conf/nginx-veto.conf.example" >&2; rm -f $@.tmp; exit 1; }
	mv $@.tmp $@

install-approval-page: $(BUILD)/approval-page.conf
	$(INSTALL) -d $(DESTDIR)$(VSB_SHARE)/nginx
	cd approval-page && find . -type f | sort | while read -r f; do \
	    $(INSTALL) -D -m 0644 "$$f" \
	        "$(DESTDIR)$(VSB_SHARE)/approval-page/$${f#./}" || exit 1; \
	done
	$(INSTALL) -m 0644 $(BUILD)/approval-page.conf $(DESTDIR)$(VSB_SHARE)/nginx/

# The module through nginx's own build against the installed nginx
# (incremental; scripts/build-module.sh).
module:
	sh scripts/build-module.sh

# MODULE_SO=path on the command line installs that file and builds nothing
install-module: $(if $(filter command line,$(origin MODULE_SO)),,module) \
                install-approval-page
	$(INSTALL) -d $(DESTDIR)$(NGINX_MODULES_DIR) \
	    $(DESTDIR)$(NGINX_MODULES_AVAILABLE)
	$(INSTALL) -m 0644 $(MODULE_SO) $(DESTDIR)$(NGINX_MODULES_DIR)/$(VSB_MOD_SO)
	echo 'load_module $(NGINX_MODULES_DIR)/$(VSB_MOD_SO);' \
	    > $(DESTDIR)$(NGINX_MODULES_AVAILABLE)/$(VSB_MOD_CONF)
	chmod 0644 $(DESTDIR)$(NGINX_MODULES_AVAILABLE)/$(VSB_MOD_CONF)
	if [ -n "$(NGINX_MODULES_ENABLED)" ]; then \
	    $(INSTALL) -d $(DESTDIR)$(NGINX_MODULES_ENABLED) && \
	    ln -sfn $(NGINX_MODULES_AVAILABLE)/$(VSB_MOD_CONF) \
	        $(DESTDIR)$(NGINX_MODULES_ENABLED)/50-$(VSB_MOD_CONF); \
	fi

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/sandbox-helper \
	    $(DESTDIR)$(SBINDIR)/sandbox-helperctl \
	    $(DESTDIR)$(SBINDIR)/sandbox-imagectl \
	    $(DESTDIR)$(BINDIR)/veto-token \
	    $(DESTDIR)$(PKGLIBDIR)/egress-proxy \
	    $(DESTDIR)$(PKGLIBDIR)/sandbox-helper-ready \
	    $(DESTDIR)$(UNITDIR)/veto-sandbox-helper.service \
	    $(DESTDIR)$(SYSUSERSDIR)/veto-sandbox-helper.conf \
	    $(DESTDIR)$(MANDIR)/man8/sandbox-helper.8 \
	    $(DESTDIR)$(MANDIR)/man8/sandbox-helperctl.8 \
	    $(DESTDIR)$(MANDIR)/man8/sandbox-imagectl.8 \
	    $(DESTDIR)$(MANDIR)/man1/veto-token.1 \
	    $(DESTDIR)$(DOCDIR)/examples/policy.example.json \
	    $(DESTDIR)$(DOCDIR)/examples/veto-sandbox-site.conf \
	    $(DESTDIR)$(NGINX_MODULES_DIR)/$(VSB_MOD_SO) \
	    $(DESTDIR)$(NGINX_MODULES_AVAILABLE)/$(VSB_MOD_CONF) \
	    $(DESTDIR)$(NGINX_MODULES_ENABLED)/50-$(VSB_MOD_CONF)
	rm -rf $(DESTDIR)$(VSB_SHARE)/approval-page \
	    $(DESTDIR)$(VSB_SHARE)/nginx/approval-page.conf
	-rmdir $(DESTDIR)$(PKGLIBDIR) $(DESTDIR)$(DOCDIR)/examples \
	    $(DESTDIR)$(DOCDIR) $(DESTDIR)$(VSB_SHARE)/nginx \
	    $(DESTDIR)$(VSB_SHARE) 2>/dev/null
	@echo "uninstall: $(DESTDIR)$(VSB_ETC) kept (configuration)"
