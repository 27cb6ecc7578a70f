# appliance/compat/: libcloche-compat.so, preloaded into every process of a
# sandbox (see xattr.c and docs/sandbox.md).  Never built with sanitizers:
# their runtimes must come first in a process, which a preloaded library in
# every program of the template cannot arrange.
COMPAT_CFLAGS := $(filter-out -fsanitize=% -fno-sanitize-recover=% -O1,$(CFLAGS)) -O2 \
	-fPIC -shared -fvisibility=hidden
$(BUILD)/lib/libcloche-compat.so: appliance/compat/xattr.c
	@mkdir -p $(@D)
	$(CC) $(COMPAT_CFLAGS) -o $@ $<

BINS += $(BUILD)/lib/libcloche-compat.so
