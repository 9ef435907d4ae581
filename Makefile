# Veto Sandbox: sandbox-helper, its operator client, unit tests, fuzzers.
# The nginx module is built by scripts/build-module.sh (nginx's own build).
#
#   make                 helper, sandbox-helperctl, sandbox-imagectl in build/
#   make SAN=1 BUILD=build-asan    the same under ASan + UBSan
#   make unit            cmocka unit tests of the helper, run
#   make unit-module     cmocka unit tests of the module's pure files, run
#   make fuzz            libFuzzer targets (clang) in build-fuzz/
#   make fuzz-cov        the same with source-based coverage, build-fuzz-cov/
#   make egress          the egress proxy (egress-proxy/egress.mk)
#   make tools           build/veto-token (tools/tools.mk)
#   make install         DESTDIR, PREFIX, ...: see install.mk

CC       ?= cc
BUILD    ?= build
SAN      ?= 0

WARN      = -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wformat=2 \
            -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
CSTD      = -std=c11 -D_GNU_SOURCE
ifeq ($(SAN),1)
OPT       = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
            -fno-sanitize-recover=undefined
LDSAN     = -fsanitize=address,undefined
else
OPT       = -O2 -g -fstack-protector-strong -D_FORTIFY_SOURCE=2
LDSAN     =
endif

PKGS      = jansson libseccomp libcrypto zlib
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   := $(shell pkg-config --libs $(PKGS))

CFLAGS   += $(CSTD) $(WARN) $(OPT) $(PKG_CFLAGS) -Isandbox-helper \
            -Iegress-proxy
# full RELRO: the GOT read-only, and every symbol bound at start rather
# than on first call, which each exec's freshly forked init otherwise
# paid again (a lookup and a copied page per function)
LDFLAGS  += $(LDSAN) -Wl,-z,relro,-z,now

HELPER_MAIN  = sandbox-helper/main.c
CTL_SRC      = sandbox-helper/sandbox-helperctl.c
IMAGECTL_SRC = sandbox-helper/sandbox-imagectl.c
LIB_SRCS     = $(filter-out $(HELPER_MAIN) $(CTL_SRC) $(IMAGECTL_SRC), \
                 $(wildcard sandbox-helper/*.c))
# The egress proxy's allowlist parser: the helper validates entries with
# the very code the proxy will apply them with.
HELPER_EG_SRCS = egress-proxy/allow.c egress-proxy/addr.c \
                 egress-proxy/cred_parse.c egress-proxy/cred_file.c
LIB_OBJS     = $(patsubst sandbox-helper/%.c,$(BUILD)/obj/%.o,$(LIB_SRCS)) \
               $(patsubst egress-proxy/%.c,$(BUILD)/obj/eg_%.o,$(HELPER_EG_SRCS))
HEADERS      = $(wildcard sandbox-helper/*.h) egress-proxy/eg_allow.h \
               egress-proxy/eg_addr.h egress-proxy/eg_cred_parse.h \
               egress-proxy/eg_cred_file.h

UNIT_SRCS    = $(filter-out t/unit/test_module_%, $(wildcard t/unit/test_*.c))
UNIT_BINS    = $(patsubst t/unit/%.c,$(BUILD)/unit/%,$(UNIT_SRCS))

FUZZ_SRCS    = $(wildcard t/fuzz/fuzz_*.c)
FUZZ_BUILD  ?= build-fuzz
FUZZ_BINS    = $(patsubst t/fuzz/%.c,$(FUZZ_BUILD)/%,$(FUZZ_SRCS))
FUZZ_OBJS    = $(patsubst sandbox-helper/%.c,$(FUZZ_BUILD)/obj/%.o,$(LIB_SRCS)) \
               $(patsubst egress-proxy/%.c,$(FUZZ_BUILD)/obj/eg_%.o, \
                 $(HELPER_EG_SRCS))

.PHONY: all unit unit-module fuzz fuzz-cov clean

all: $(BUILD)/sandbox-helper $(BUILD)/sandbox-helperctl \
     $(BUILD)/sandbox-imagectl egress tools

$(BUILD)/obj/%.o: sandbox-helper/%.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/obj/eg_%.o: egress-proxy/%.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/libvsb.a: $(LIB_OBJS)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/sandbox-helper: $(BUILD)/obj/main.o $(BUILD)/libvsb.a
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/sandbox-helperctl: $(BUILD)/obj/sandbox-helperctl.o $(BUILD)/libvsb.a
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/sandbox-imagectl: $(BUILD)/obj/sandbox-imagectl.o $(BUILD)/libvsb.a
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/unit/%: t/unit/%.c $(BUILD)/libvsb.a $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libvsb.a $(PKG_LIBS) -lcmocka

unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "# $$t"; $$t; done

# libFuzzer needs clang; every helper source except the mains is linked in,
# with the egress allowlist parser the helper shares.
# UBSan findings abort (as in the SAN=1 build), so the fuzzer sees them as
# crashes instead of printing them and going on.  The harnesses are held to
# $(WARN); the helper's sources are by gcc in the normal build (clang's
# -Wformat=2 differs).  FUZZ_COV=1 swaps the sanitizers for clang's
# source-based coverage (scripts/fuzz-coverage.sh).
ifeq ($(FUZZ_COV),1)
FUZZ_INSTR   = -fprofile-instr-generate -fcoverage-mapping
FUZZ_LIBSAN  = -fsanitize=fuzzer-no-link
FUZZ_EXESAN  = -fsanitize=fuzzer
else
FUZZ_INSTR   = -fno-sanitize-recover=undefined
FUZZ_LIBSAN  = -fsanitize=fuzzer-no-link,address,undefined
FUZZ_EXESAN  = -fsanitize=fuzzer,address,undefined
endif
FUZZ_CFLAGS  = $(CSTD) -g -O1 -fno-omit-frame-pointer $(FUZZ_INSTR) \
               $(PKG_CFLAGS) -Isandbox-helper -Iegress-proxy -DVSB_FUZZING

$(FUZZ_BUILD)/obj/%.o: sandbox-helper/%.c $(HEADERS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) $(FUZZ_LIBSAN) -c -o $@ $<

$(FUZZ_BUILD)/obj/eg_%.o: egress-proxy/%.c $(HEADERS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) $(FUZZ_LIBSAN) -c -o $@ $<

$(FUZZ_BUILD)/%: t/fuzz/%.c $(FUZZ_OBJS) $(HEADERS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) $(WARN) $(FUZZ_EXESAN) -o $@ $< $(FUZZ_OBJS) \
	    $(PKG_LIBS)

# Objects are shared by every target: keep them between builds.
.SECONDARY: $(FUZZ_OBJS)

fuzz: $(FUZZ_BINS)

fuzz-cov:
	$(MAKE) fuzz FUZZ_COV=1 FUZZ_BUILD=build-fuzz-cov

include egress-proxy/egress.mk
include tools/tools.mk
include install.mk

# The module's pure files (no request, no Redis: _hash.c, _redact.c,
# _summary.c, _output.c, _policy*.c, _ops.c and the op groups' files (the
# rows as data),
# _network.c with the proxy's entry parser, _event.c, _metrics_store.c,
# _sentinel_parse.c, and the helper's path check it shares) tested and fuzzed without nginx: nginx's headers as
# scripts/build-module.sh configured them, and t/unit/ngx_core_stub.c
# for the few core calls they make (Debian ships no nginx sources).
NGX_SRC      = build-module/nginx-src
MODULE_INCS  = $(addprefix -I$(NGX_SRC)/, objs src/core src/event \
                 src/event/modules src/os/unix src/http src/http/modules \
                 src/http/v2) -Ingx_veto_sandbox_module -Isandbox-helper \
                 -Iegress-proxy -It/unit
MODULE_PURE  = $(addprefix ngx_veto_sandbox_module/ngx_http_veto_sandbox_, \
                 hash.c redact.c summary.c output.c policy.c \
                 policy_approvals.c policy_strings.c ops.c health.c openapi.c \
                 about.c profiles.c sandboxes.c snapshots.c execs.c review.c \
                 admin.c files.c \
                 policy_match.c network.c event.c metrics_store.c \
                 sentinel_parse.c peer_cred.c) \
               $(HELPER_EG_SRCS) sandbox-helper/paths.c t/unit/ngx_core_stub.c
MODULE_DEPS  = $(MODULE_PURE) $(wildcard ngx_veto_sandbox_module/*.h) \
               egress-proxy/eg_allow.h egress-proxy/eg_addr.h \
               t/unit/ngx_core_stub.h $(wildcard t/unit/module_*.h) \
               $(NGX_SRC)/objs/ngx_auto_config.h
# the op table's rows as data: the policy reads their names and kinds
MODULE_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -Wpointer-arith \
                -DNGX_HTTP_VSB_OPS_DATA_ONLY $(MODULE_INCS) $(PKG_CFLAGS)
MODULE_LIBS  = -ljansson -lcrypto
MODULE_UNIT_SRCS = $(wildcard t/unit/test_module_*.c)
MODULE_UNIT_BINS = $(patsubst t/unit/%.c,$(BUILD)/unit/%,$(MODULE_UNIT_SRCS))

$(NGX_SRC)/objs/ngx_auto_config.h:
	bash scripts/build-module.sh

$(BUILD)/unit/test_module_%: t/unit/test_module_%.c $(MODULE_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(OPT) $(MODULE_CFLAGS) $(LDFLAGS) -o $@ $< $(MODULE_PURE) \
		$(MODULE_LIBS) -lcmocka

unit-module: $(MODULE_UNIT_BINS)
	@set -e; for t in $(MODULE_UNIT_BINS); do echo "# $$t"; $$t; done

# the module's fuzz targets also drive the request builders
MODULE_FUZZ  = $(MODULE_PURE) \
               ngx_veto_sandbox_module/ngx_http_veto_sandbox_headers.c \
               ngx_veto_sandbox_module/ngx_http_veto_sandbox_request.c \
               ngx_veto_sandbox_module/ngx_http_veto_sandbox_request_fields.c \
               ngx_veto_sandbox_module/ngx_http_veto_sandbox_request_network.c \
               ngx_veto_sandbox_module/ngx_http_veto_sandbox_env.c \
               ngx_veto_sandbox_module/ngx_http_veto_sandbox_request_lifetime.c

# An archive, so that a target links only the files it calls: a target
# that includes a module file (for its statics) and stands in for the
# rest of the module (t/fuzz/fuzz_module_*.c) pulls in nothing else.
MODULE_FUZZ_LIB = $(FUZZ_BUILD)/module/libvsb_module.a
MODULE_FUZZ_OBJS = $(patsubst %.c,$(FUZZ_BUILD)/module/%.o,$(MODULE_FUZZ))

$(FUZZ_BUILD)/module/%.o: %.c $(MODULE_DEPS)
	@mkdir -p $(dir $@)
	clang -g -O1 $(FUZZ_INSTR) $(FUZZ_LIBSAN) $(MODULE_CFLAGS) -c -o $@ $<

$(MODULE_FUZZ_LIB): $(MODULE_FUZZ_OBJS)
	rm -f $@
	ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_module_%: t/fuzz/fuzz_module_%.c $(MODULE_FUZZ_LIB) \
		$(MODULE_DEPS) $(wildcard ngx_veto_sandbox_module/*.c) \
		$(wildcard t/fuzz/fuzz_module_*.h)
	@mkdir -p $(dir $@)
	clang -g -O1 $(FUZZ_INSTR) $(FUZZ_EXESAN) $(MODULE_CFLAGS) \
		-o $@ $< $(MODULE_FUZZ_LIB) $(MODULE_LIBS)

# libjwt (libjwt-dev) is the differential target's oracle
$(FUZZ_BUILD)/fuzz_module_jwt_diff: MODULE_LIBS += -ljwt

clean:
	rm -rf build build-asan build-fuzz build-fuzz-cov
