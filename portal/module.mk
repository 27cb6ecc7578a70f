# portal/: cloche-portal, the REST portal (leases, queue, placement, SQLite).
CFLAGS_portal := $(call pc_cflags,$(PKGS) sqlite3)

PORTAL_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard portal/*.c)) \
	$(BUILD)/obj/portal/openapi.o

# The OpenAPI document is compiled in as one C string.
$(BUILD)/gen/portal/openapi.c: portal/openapi.json
	@mkdir -p $(@D)
	@{ echo '#include "portal/pt_openapi.h"'; echo 'const char pt_openapi_json[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } >$@
$(BUILD)/obj/portal/openapi.o: $(BUILD)/gen/portal/openapi.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/bin/cloche-portal: $(PORTAL_OBJS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(COMMON_LIBS) $(call pc_libs,sqlite3) -lpthread

BINS += $(BUILD)/bin/cloche-portal
