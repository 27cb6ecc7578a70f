# mcp/browser/: mcp-browser, the MCP server that drives the visible Chromium.
MCP_BROWSER_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard mcp/browser/*.c))
$(MCP_BROWSER_OBJS): CFLAGS += $(call pc_cflags,$(PKGS)) -pthread

$(BUILD)/bin/mcp-browser: $(MCP_BROWSER_OBJS) $(BUILD)/lib/libmcp.a $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -pthread -o $@ $^ $(LDFLAGS) $(COMMON_LIBS) -lm

# Built once the MCP library's module.mk is in the tree.
ifneq ($(wildcard mcp/module.mk mcp/lib/module.mk),)
BINS += $(BUILD)/bin/mcp-browser
endif

# Unit suite: snapshot rendering, base64, the DevTools client on a fake pipe.
UNIT_MCPB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/unit/mcp-browser/*.c))
$(UNIT_MCPB_OBJS): CFLAGS += -pthread
$(BUILD)/tests/unit-mcp-browser: $(UNIT_MCPB_OBJS) $(filter-out %/main.o,$(MCP_BROWSER_OBJS)) \
		$(BUILD)/lib/libmcp.a $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -pthread -o $@ $^ $(LDFLAGS) $(call pc_libs,check) $(COMMON_LIBS) -lm

ifneq ($(wildcard mcp/module.mk mcp/lib/module.mk),)
TESTS += $(BUILD)/tests/unit-mcp-browser
endif
