# proxy/: cloche-proxy (in progress: the request-head parser, Host routing and
# the upstream head rewrite so far, with their unit tests and fuzz target).
CFLAGS_proxy := $(call pc_cflags,$(PKGS))

UNIT_PROXY_OBJS := $(BUILD)/obj/tests/unit/proxy/test_proxy.o $(BUILD)/obj/proxy/px_head.o \
	$(BUILD)/obj/proxy/px_host.o $(BUILD)/obj/proxy/px_rewrite.o
$(BUILD)/obj/tests/unit/proxy/%.o: CFLAGS += $(call pc_cflags,check)
$(BUILD)/tests/unit-proxy: $(UNIT_PROXY_OBJS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(call pc_libs,check) $(COMMON_LIBS)

TESTS += $(BUILD)/tests/unit-proxy
