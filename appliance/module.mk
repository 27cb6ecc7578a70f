# appliance/: the programs that run inside every sandbox.
CFLAGS_appliance := $(call pc_cflags,$(PKGS) x11 xtst xdamage xfixes xi libvncserver)

INIT_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard appliance/init/*.c))
$(BUILD)/bin/cloche-init: $(INIT_OBJS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(COMMON_LIBS)

VNC_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard appliance/vnc/*.c))
$(BUILD)/bin/cloche-vnc: $(VNC_OBJS) $(BUILD)/lib/libx11input.a $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(COMMON_LIBS) \
		$(call pc_libs,libvncserver x11 xext xtst xdamage xfixes xi) -lpthread

BINS += $(BUILD)/bin/cloche-init $(BUILD)/bin/cloche-vnc

XPROBE_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard appliance/xprobe/*.c))
$(BUILD)/bin/cloche-xprobe: $(XPROBE_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(call pc_libs,x11)

BINS += $(BUILD)/bin/cloche-xprobe

REC_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard appliance/rec/*.c))
$(BUILD)/bin/cloche-rec: $(REC_OBJS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(COMMON_LIBS)

BINS += $(BUILD)/bin/cloche-rec
