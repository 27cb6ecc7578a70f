# mcp/desktop/: mcp-desktop, the computer-use MCP server (port 8100), plus
# its unit tests and the host harness that drives its action layer.
MCP_DESKTOP_PKGS := x11 xtst xfixes xext libpng
MCP_DESKTOP_SRCS := $(wildcard mcp/desktop/*.c)
MCP_DESKTOP_OBJS := $(MCP_DESKTOP_SRCS:%.c=$(BUILD)/obj/%.o)
# Everything but main.c and the MCP glue: what the harness and tests link.
MCP_DESKTOP_CORE := $(filter-out %/main.o %/tools.o %/control.o,$(MCP_DESKTOP_OBJS))
MCP_DESKTOP_LIBS := $(call pc_libs,$(MCP_DESKTOP_PKGS)) -lpthread -lm

$(MCP_DESKTOP_OBJS): CFLAGS += $(call pc_cflags,$(PKGS) $(MCP_DESKTOP_PKGS))

$(BUILD)/bin/mcp-desktop: $(MCP_DESKTOP_OBJS) $(BUILD)/lib/libmcp.a $(BUILD)/lib/libx11input.a \
		$(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(COMMON_LIBS) $(MCP_DESKTOP_LIBS)

BINS += $(BUILD)/bin/mcp-desktop

# Unit tests: key names, UTF-8, resampling and PNG, the screen hash and the
# table of last images, sizes and presets (no display needed).
UNIT_DESK_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/unit/mcp-desktop/*.c))
$(UNIT_DESK_OBJS): CFLAGS += $(call pc_cflags,$(MCP_DESKTOP_PKGS))
$(BUILD)/tests/unit-mcp-desktop: $(UNIT_DESK_OBJS) $(BUILD)/obj/mcp/desktop/keys.o \
		$(BUILD)/obj/mcp/desktop/image.o $(BUILD)/obj/mcp/desktop/seen.o \
		$(BUILD)/obj/mcp/desktop/geom.o $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(call pc_libs,check) $(COMMON_LIBS) \
		$(MCP_DESKTOP_LIBS)

TESTS += $(BUILD)/tests/unit-mcp-desktop

# desk-try: runs actions from JSON lines on stdin against a display, for
# developing and checking the action layer without an MCP client.
$(BUILD)/obj/tests/tools/desk-try.o: CFLAGS += $(call pc_cflags,$(MCP_DESKTOP_PKGS))
$(BUILD)/tests/tools/desk-try: $(BUILD)/obj/tests/tools/desk-try.o $(MCP_DESKTOP_CORE) \
		$(BUILD)/lib/libx11input.a $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(COMMON_LIBS) $(MCP_DESKTOP_LIBS)

BINS += $(BUILD)/tests/tools/desk-try
