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

# Unit tests of the library's pure parts and of the HTTP transport
# (tests/unit/mcp/; that directory is too deep for the top Makefile's
# module.mk glob, so it is registered here).
UNIT_MCP_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/unit/mcp/*.c))
$(BUILD)/tests/unit-mcp: $(UNIT_MCP_OBJS) $(BUILD)/lib/libmcp.a $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(call pc_libs,check) $(COMMON_LIBS) -lpthread -lm

TESTS += $(BUILD)/tests/unit-mcp

# mcp-shell's tools through a real server on a thread, run_command and the
# background processes with real process trees, the file and search tools on
# a temporary directory (tests/unit/mcp-shell/, too deep for the glob too).
UNIT_MSH_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/unit/mcp-shell/*.c))
$(BUILD)/tests/unit-mcp-shell: $(UNIT_MSH_OBJS) $(filter-out %/main.o,$(MCP_SHELL_OBJS)) \
		$(BUILD)/lib/libmcp.a $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(call pc_libs,check) $(COMMON_LIBS) -lpthread -lm

TESTS += $(BUILD)/tests/unit-mcp-shell
