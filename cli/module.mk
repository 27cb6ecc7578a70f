# cli/: cloche, the command-line client of the portal (docs/cli.md).
CFLAGS_cli := $(call pc_cflags,$(PKGS))

CLI_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard cli/*.c))
$(BUILD)/bin/cloche: $(CLI_OBJS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(COMMON_LIBS)

BINS += $(BUILD)/bin/cloche

# Unit tests of its pure parts and its command table (tests/unit/cli/): every
# module but main.o, since the table names every handler.
UNIT_CLI_OBJS := $(BUILD)/obj/tests/unit/cli/test_cli.o \
	$(filter-out $(BUILD)/obj/cli/main.o,$(CLI_OBJS))
$(BUILD)/obj/tests/unit/cli/%.o: CFLAGS += $(call pc_cflags,check)
$(BUILD)/tests/unit-cli: $(UNIT_CLI_OBJS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(call pc_libs,check) $(COMMON_LIBS)

TESTS += $(BUILD)/tests/unit-cli
