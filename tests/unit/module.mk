# tests/unit/: Check-based unit tests, one binary per directory under test.
UNIT_COMMON_SRCS := $(wildcard tests/unit/common/*.c)
UNIT_COMMON_OBJS := $(UNIT_COMMON_SRCS:%.c=$(BUILD)/obj/%.o)
CFLAGS_tests := $(call pc_cflags,check $(PKGS))

$(BUILD)/obj/tests/unit/common/test_version.o: CFLAGS += -DCLOCHE_VERSION_FILE='"$(CURDIR)/VERSION"'

$(BUILD)/tests/unit-common: $(UNIT_COMMON_OBJS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(call pc_libs,check) $(COMMON_LIBS)

TESTS += $(BUILD)/tests/unit-common

UNIT_APPLIANCE_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/unit/appliance/*.c)) \
	$(BUILD)/obj/appliance/init/config.o $(BUILD)/obj/appliance/init/memguard.o \
	$(BUILD)/obj/appliance/init/netcheck.o $(BUILD)/obj/appliance/vnc/marker.o \
	$(BUILD)/obj/appliance/vnc/lease.o $(BUILD)/obj/appliance/vnc/state.o \
	$(BUILD)/obj/appliance/vnc/request.o \
	$(BUILD)/obj/appliance/vnc/size.o $(BUILD)/obj/appliance/x11/x11_lease.o \
	$(BUILD)/obj/appliance/rec/recorder.o $(BUILD)/obj/appliance/rec/mp4.o
$(BUILD)/obj/tests/unit/appliance/test_compat.o: CFLAGS += -DCOMPAT_SO='"$(BUILD)/lib/libcloche-compat.so"'
$(BUILD)/tests/unit-appliance: $(UNIT_APPLIANCE_OBJS) $(COMMON_LIB) | $(BUILD)/lib/libcloche-compat.so
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(call pc_libs,check libvncserver) $(COMMON_LIBS)

TESTS += $(BUILD)/tests/unit-appliance

# cloche-node's modules (tests/unit/node/), linked with the objects they test
# (test_api.c has doubles of the node itself, na_sandbox.c and its parts).
UNIT_NODE_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/unit/node/*.c)) \
	$(BUILD)/obj/node-agent/na_egress.o $(BUILD)/obj/node-agent/na_egress_policy.o \
	$(BUILD)/obj/node-agent/na_egress_http.o $(BUILD)/obj/node-agent/na_spec.o \
	$(BUILD)/obj/node-agent/na_netns.o $(BUILD)/obj/node-agent/na_cmd.o \
	$(BUILD)/obj/node-agent/na_btrfs.o $(BUILD)/obj/node-agent/na_test.o \
	$(BUILD)/obj/node-agent/na_s3.o $(BUILD)/obj/node-agent/na_api.o \
	$(BUILD)/obj/node-agent/na_id.o $(BUILD)/obj/node-agent/na_seal.o
$(BUILD)/tests/unit-node: $(UNIT_NODE_OBJS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(call pc_libs,check) $(COMMON_LIBS) -lpthread

TESTS += $(BUILD)/tests/unit-node
