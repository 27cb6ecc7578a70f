# mcp/browser/: mcp-browser, the MCP server that drives the visible Chromium.
MCP_BROWSER_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard mcp/browser/*.c)) \
	$(BUILD)/obj/mcp/browser/walk.o
$(MCP_BROWSER_OBJS): CFLAGS += $(call pc_cflags,$(PKGS)) -pthread

# The page walker (walk.js) is compiled in as one C string, br_walk_js.
$(BUILD)/gen/mcp/browser/walk.c: mcp/browser/walk.js
	@mkdir -p $(@D)
	@{ echo 'extern const char br_walk_js[];'; echo 'const char br_walk_js[] ='; \
	  sed -e '/^\/\//d' -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } >$@
$(BUILD)/obj/mcp/browser/walk.o: $(BUILD)/gen/mcp/browser/walk.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

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
