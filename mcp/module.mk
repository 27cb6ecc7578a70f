# mcp/: the MCP library (libmcp.a, linked by every MCP server) and mcp-shell.
# mcp/desktop and mcp/browser have their own module.mk and link
# $(BUILD)/lib/libmcp.a by that literal path.
CFLAGS_mcp := $(call pc_cflags,$(PKGS))

MCP_LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard mcp/lib/*.c))
$(BUILD)/lib/libmcp.a: $(MCP_LIB_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

MCP_SHELL_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard mcp/shell/*.c))
$(BUILD)/bin/mcp-shell: $(MCP_SHELL_OBJS) $(BUILD)/lib/libmcp.a $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(COMMON_LIBS) -lpthread -lm

BINS += $(BUILD)/lib/libmcp.a $(BUILD)/bin/mcp-shell

