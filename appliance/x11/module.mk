# appliance/x11/: X11 helpers shared by cloche-vnc and mcp-desktop
# (libx11input.a: XTest input with keysym remapping, and the CLIPBOARD
# selection's owner and reader, which needs xfixes and pthread).
X11_INPUT_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard appliance/x11/*.c))
X11_INPUT_LIB := $(BUILD)/lib/libx11input.a
X11_INPUT_LIBS := $(call pc_libs,x11 xtst xfixes) -lpthread

$(X11_INPUT_LIB): $(X11_INPUT_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^
