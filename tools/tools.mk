# Operator tools; included by the top-level Makefile (same BUILD, SAN,
# CC, CFLAGS, LDFLAGS).
#
#   make tools      build/veto-token (mint tokens, print a JWKS)

VT_PKGS        = jansson libcrypto
VT_PKG_CFLAGS := $(shell pkg-config --cflags $(VT_PKGS))
VT_PKG_LIBS   := $(shell pkg-config --libs $(VT_PKGS))
VT_SRCS        = tools/veto-token.c tools/vt_jose.c
VT_HEADERS     = tools/vt_jose.h

.PHONY: tools

tools: $(BUILD)/veto-token

$(BUILD)/veto-token: $(VT_SRCS) $(VT_HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(VT_PKG_CFLAGS) -Itools $(LDFLAGS) -o $@ $(VT_SRCS) \
	    $(VT_PKG_LIBS)
