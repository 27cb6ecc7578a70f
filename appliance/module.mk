# appliance/: the programs that run inside every sandbox.
CFLAGS_appliance := $(call pc_cflags,$(PKGS) x11 xtst xdamage xfixes xi xrandr libvncserver)

INIT_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard appliance/init/*.c))
$(BUILD)/bin/cloche-init: $(INIT_OBJS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(COMMON_LIBS)

VNC_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard appliance/vnc/*.c)) \
	$(BUILD)/obj/appliance/vnc/page.o

# The noVNC page's script (page.js) is compiled in as one C string,
# vnc_page_js.
$(BUILD)/gen/appliance/vnc/page.c: appliance/vnc/page.js
	@mkdir -p $(@D)
	@{ echo 'extern const char vnc_page_js[];'; echo 'const char vnc_page_js[] ='; \
	  sed -e '/^\/\//d' -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } >$@
$(BUILD)/obj/appliance/vnc/page.o: $(BUILD)/gen/appliance/vnc/page.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<
$(BUILD)/bin/cloche-vnc: $(VNC_OBJS) $(BUILD)/lib/libx11input.a $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(COMMON_LIBS) \
		$(call pc_libs,libvncserver x11 xext xtst xdamage xfixes xi xrandr) -lpthread

BINS += $(BUILD)/bin/cloche-init $(BUILD)/bin/cloche-vnc

XPROBE_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard appliance/xprobe/*.c))
$(BUILD)/bin/cloche-xprobe: $(XPROBE_OBJS) $(BUILD)/lib/libx11input.a $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(COMMON_LIBS) $(call pc_libs,x11 xrandr)

BINS += $(BUILD)/bin/cloche-xprobe

REC_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard appliance/rec/*.c))
$(BUILD)/bin/cloche-rec: $(REC_OBJS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(COMMON_LIBS)

BINS += $(BUILD)/bin/cloche-rec
