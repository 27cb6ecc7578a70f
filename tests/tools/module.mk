# tests/tools/: helper programs the integration tests drive (not tests
# themselves).  vnc-client is a small libvncclient viewer.
VNC_CLIENT_OBJS := $(BUILD)/obj/tests/tools/vnc-client.o
VNC_CLIENT_PKGS := libvncclient x11 zlib

# tests/ objects share CFLAGS_tests (tests/unit/module.mk); these objects
# add libvncclient's flags on their own.
$(VNC_CLIENT_OBJS): CFLAGS += $(call pc_cflags,$(VNC_CLIENT_PKGS))

$(BUILD)/tests/tools/vnc-client: $(VNC_CLIENT_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(call pc_libs,$(VNC_CLIENT_PKGS))

TOOLS += $(BUILD)/tests/tools/vnc-client
BINS += $(BUILD)/tests/tools/vnc-client
