# portal/: cloche-portal, the REST portal (leases, queue, placement, SQLite).
CFLAGS_portal := $(call pc_cflags,$(PKGS) sqlite3)

PORTAL_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard portal/*.c)) \
	$(BUILD)/obj/portal/openapi.o $(BUILD)/obj/portal/web.o

# The OpenAPI document is compiled in as one C string.
$(BUILD)/gen/portal/openapi.c: portal/openapi.json
	@mkdir -p $(@D)
	@{ echo '#include "portal/pt_openapi.h"'; echo 'const char pt_openapi_json[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } >$@
$(BUILD)/obj/portal/openapi.o: $(BUILD)/gen/portal/openapi.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

# The dashboard's files, each one C string named after it (pt_web.c).
PORTAL_WEB := portal/web/index.html portal/web/app.css portal/web/app.js
$(BUILD)/gen/portal/web.c: $(PORTAL_WEB)
	@mkdir -p $(@D)
	@for f in $(PORTAL_WEB); do \
	  n=$$(basename $$f | tr '.-' '__'); echo "extern const char pt_web_$$n[];"; echo "const char pt_web_$$n[] ="; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $$f; echo ';'; \
	done >$@
$(BUILD)/obj/portal/web.o: $(BUILD)/gen/portal/web.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/bin/cloche-portal: $(PORTAL_OBJS) $(BUILD)/lib/libmcp.a $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(COMMON_LIBS) $(call pc_libs,sqlite3) -lpthread

BINS += $(BUILD)/bin/cloche-portal

# Unit tests (tests/unit/portal/), linked with the modules they test.
UNIT_PORTAL_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/unit/portal/*.c)) \
	$(BUILD)/obj/portal/pt_state.o $(BUILD)/obj/portal/pt_store.o $(BUILD)/obj/portal/pt_auth.o \
	$(BUILD)/obj/portal/pt_policy.o $(BUILD)/obj/portal/openapi.o $(BUILD)/obj/portal/pt_desk.o
$(BUILD)/obj/tests/unit/portal/%.o: CFLAGS += $(call pc_cflags,check sqlite3)
$(BUILD)/tests/unit-portal: $(UNIT_PORTAL_OBJS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(call pc_libs,check sqlite3) $(COMMON_LIBS) -lpthread

TESTS += $(BUILD)/tests/unit-portal
