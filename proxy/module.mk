# proxy/: cloche-proxy, the {port}-{id}.{domain} reverse proxy into sandboxes.
CFLAGS_proxy := $(call pc_cflags,$(PKGS) libssl)

PROXY_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard proxy/*.c))

$(BUILD)/bin/cloche-proxy: $(PROXY_OBJS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(COMMON_LIBS) $(call pc_libs,libssl) -lpthread

BINS += $(BUILD)/bin/cloche-proxy

UNIT_PROXY_OBJS := $(BUILD)/obj/tests/unit/proxy/test_proxy.o \
	$(BUILD)/obj/proxy/px_host.o $(BUILD)/obj/proxy/px_rewrite.o $(BUILD)/obj/proxy/px_chunk.o
$(BUILD)/obj/tests/unit/proxy/%.o: CFLAGS += $(call pc_cflags,check)
$(BUILD)/tests/unit-proxy: $(UNIT_PROXY_OBJS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(call pc_libs,check) $(COMMON_LIBS)

TESTS += $(BUILD)/tests/unit-proxy
