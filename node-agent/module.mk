# node-agent/: cloche-node, the per-node agent (btrfs pool, netns, runsc).
CFLAGS_node-agent := $(call pc_cflags,$(PKGS))

NODE_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard node-agent/*.c))
$(BUILD)/bin/cloche-node: $(NODE_OBJS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(COMMON_LIBS) -lpthread

BINS += $(BUILD)/bin/cloche-node
