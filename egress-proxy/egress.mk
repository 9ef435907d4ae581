# The egress proxy, its seam tool and its tests; included by the
# top-level Makefile (same BUILD, SAN, CC, WARN, OPT).
#
#   make egress                 build/egress-proxy, build/egress-linkctl
#   make SAN=1 BUILD=build-asan egress
#   make egress-unit            cmocka tests of the parsers, run
#   make egress-fuzz            libFuzzer targets in build-fuzz/

EG_DIR        = egress-proxy
EG_PKGS       = jansson libseccomp libcares libssl libcrypto
EG_PKG_CFLAGS := $(shell pkg-config --cflags $(EG_PKGS))
EG_PKG_LIBS   := $(shell pkg-config --libs $(EG_PKGS))
EG_SANDEF     = $(if $(filter 1,$(SAN)),-DEG_SANITIZER,)
EG_CFLAGS     = $(CSTD) $(WARN) $(OPT) $(EG_PKG_CFLAGS) $(EG_SANDEF) \
                -I$(EG_DIR) -Isandbox-helper

EG_HEADERS    = $(wildcard $(EG_DIR)/*.h) sandbox-helper/vsb_frame.h \
                sandbox-helper/vsb_loop.h \
                sandbox-helper/vsb_unixsock.h \
                sandbox-helper/vsb_fdio.h \
                sandbox-helper/vsb_protocol.h \
                sandbox-helper/vsb_egress_protocol.h \
                sandbox-helper/vsb_egress_link.h
EG_PROXY_SRCS = $(filter-out $(EG_DIR)/egress-linkctl.c, \
                  $(wildcard $(EG_DIR)/*.c))
# with the helper's frame parser, the event loop both processes run on
# and the bind of their listening Unix sockets
EG_PROXY_OBJS = $(patsubst $(EG_DIR)/%.c,$(BUILD)/eg-obj/%.o,$(EG_PROXY_SRCS)) \
                $(BUILD)/eg-obj/vsb_frame.o $(BUILD)/eg-obj/vsb_loop.o \
                $(BUILD)/eg-obj/vsb_unixsock.o
EG_PARSERS    = $(EG_DIR)/addr.c $(EG_DIR)/allow.c $(EG_DIR)/sni.c \
                $(EG_DIR)/cred_parse.c $(EG_DIR)/ireq.c \
                $(EG_DIR)/http.c $(EG_DIR)/dns.c $(EG_DIR)/limits.c
EG_LINK_SRCS  = $(EG_DIR)/egress-linkctl.c sandbox-helper/egress_link.c \
                sandbox-helper/fdio.c \
                sandbox-helper/net.c \
                sandbox-helper/frame.c

.PHONY: egress egress-unit egress-fuzz

egress: $(BUILD)/egress-proxy $(BUILD)/egress-linkctl

$(BUILD)/eg-obj/%.o: $(EG_DIR)/%.c $(EG_HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(EG_CFLAGS) -c -o $@ $<

$(BUILD)/eg-obj/vsb_frame.o: sandbox-helper/frame.c $(EG_HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(EG_CFLAGS) -c -o $@ $<

$(BUILD)/eg-obj/vsb_loop.o: sandbox-helper/loop.c $(EG_HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(EG_CFLAGS) -c -o $@ $<

$(BUILD)/eg-obj/vsb_unixsock.o: sandbox-helper/unixsock.c $(EG_HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(EG_CFLAGS) -c -o $@ $<

$(BUILD)/egress-proxy: $(EG_PROXY_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(EG_PKG_LIBS)

$(BUILD)/egress-linkctl: $(EG_LINK_SRCS) $(EG_HEADERS)
	$(CC) $(EG_CFLAGS) $(LDFLAGS) -o $@ $(EG_LINK_SRCS) $(EG_PKG_LIBS)

# Unit tests of the proxy's parsers: t/unit/test_egress_*.c.  This rule's
# stem is shorter than the helper's generic one, so make picks it.
$(BUILD)/unit/test_egress_%: t/unit/test_egress_%.c $(EG_PARSERS) $(EG_HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(EG_CFLAGS) $(LDFLAGS) -o $@ $< $(EG_PARSERS) -lcmocka

EG_UNIT_BINS = $(patsubst t/unit/%.c,$(BUILD)/unit/%, \
                 $(wildcard t/unit/test_egress_*.c))

egress-unit: $(EG_UNIT_BINS)
	@set -e; for t in $(EG_UNIT_BINS); do echo "# $$t"; $$t; done

# FUZZ_BUILD, FUZZ_INSTR and FUZZ_EXESAN come from the Makefile's fuzz
# section: build-fuzz/ with sanitizers, or build-fuzz-cov/ with coverage.
EG_FUZZ_CFLAGS = $(CSTD) -g -O1 $(FUZZ_INSTR) $(FUZZ_EXESAN) \
                 -I$(EG_DIR) -DVSB_FUZZING

$(FUZZ_BUILD)/fuzz_egress_%: t/fuzz/fuzz_egress_%.c $(EG_PARSERS) $(EG_HEADERS)
	@mkdir -p $(dir $@)
	clang $(EG_FUZZ_CFLAGS) -o $@ $< $(EG_PARSERS)

egress-fuzz: $(patsubst t/fuzz/%.c,build-fuzz/%,$(wildcard t/fuzz/fuzz_egress_*.c))
