# common/: the helper library every program links (libcommon.a).
COMMON_SRCS := $(wildcard common/*.c)
COMMON_OBJS := $(COMMON_SRCS:%.c=$(BUILD)/obj/%.o)
COMMON_LIB := $(BUILD)/lib/libcommon.a
COMMON_LIBS := $(call pc_libs,$(PKGS))
CFLAGS_common := $(call pc_cflags,$(PKGS))

$(COMMON_LIB): $(COMMON_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

# The tree's version (the file VERSION) reaches the compiler once, on
# version.o's command line: a new VERSION rebuilds that object, and every
# program relinks.  A malformed one stops the build here.
CLOCHE_VERSION := $(shell cat VERSION)
ifeq ($(shell grep -Exq '[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?' VERSION && echo ok),)
$(error VERSION must hold one MAJOR.MINOR.PATCH[-PRERELEASE] line, not `$(CLOCHE_VERSION)`)
endif
$(BUILD)/obj/common/version.o: VERSION
$(BUILD)/obj/common/version.o: CFLAGS += -DCLOCHE_VERSION='"$(CLOCHE_VERSION)"'
