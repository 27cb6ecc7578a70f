# common/: the helper library every program links (libcommon.a).
COMMON_SRCS := $(wildcard common/*.c)
COMMON_OBJS := $(COMMON_SRCS:%.c=$(BUILD)/obj/%.o)
COMMON_LIB := $(BUILD)/lib/libcommon.a
COMMON_LIBS := $(call pc_libs,$(PKGS))
CFLAGS_common := $(call pc_cflags,$(PKGS))

$(COMMON_LIB): $(COMMON_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^
