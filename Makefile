# cloche: one non-recursive make for the whole tree.  Each directory adds its
# targets in its own module.mk; this file holds flags and the top-level verbs.
#
#   make                      build everything into build/
#   make SANITIZE=address,undefined   same, with sanitizers, into build-san/
#   make unit                 run the C unit tests
#   make check                build, unit tests and a short fuzz pass (no root)
#   make test                 install what is needed, build, pass every test
#   make run / make stop      start / stop the all-in-one appliance
#   make clean-data           stop, and drop the portal's database
#   make bench                print benchmark figures (bench/results/)
#   make fuzz                 run the libFuzzer targets (tests/fuzz/, needs clang)
.DEFAULT_GOAL := all
SHELL := /bin/bash

SANITIZE ?=
BUILD ?= build$(if $(SANITIZE),-san)
PKGS := jansson libwebsockets libcurl libcrypto

CC ?= cc
CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g -pipe \
	-Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2 -Wno-format-nonliteral -Wpointer-arith -Wvla -Wundef \
	-fstack-protector-strong -I. $(EXTRA_CFLAGS)
LDFLAGS := $(EXTRA_LDFLAGS)
ifneq ($(SANITIZE),)
CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all -O1
LDFLAGS += -fsanitize=$(SANITIZE)
endif

pc_cflags = $(shell pkg-config --cflags $(1))
pc_libs = $(shell pkg-config --libs $(1))

# The verbs below run scripts that install the dependencies first, so a
# command line of verbs only reads no module.mk: nothing asks pkg-config
# about libraries that are not installed yet.  Building without them stops
# at one line that says what to do.
VERBS := deps test run stop clean-data bench clean
ifneq ($(MAKECMDGOALS),)
ifeq ($(filter-out $(VERBS),$(MAKECMDGOALS)),)
VERBS_ONLY := 1
endif
endif
ifndef VERBS_ONLY
ifneq ($(shell pkg-config --exists $(PKGS) && echo ok),ok)
$(error the build dependencies are missing: run `make deps` (scripts/install-deps.sh) as root first)
endif
endif

BINS :=
TESTS :=

# One rule for every object: build/obj/<dir>/<file>.o from <dir>/<file>.c,
# with header dependencies tracked by the compiler.
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CFLAGS_$(firstword $(subst /, ,$<))) -MMD -MP -c -o $@ $<

# Every directory owns a module.mk; common/ first since the others link it.
ifndef VERBS_ONLY
include common/module.mk
include $(filter-out common/module.mk,$(sort $(wildcard */module.mk */*/module.mk)))
-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
endif

all: $(BINS) $(TESTS)

unit: $(TESTS)
	@set -e; for t in $(TESTS); do echo "== $$t"; CK_FORK=yes $$t; done

# The loop to run while editing: no root, no template, a few minutes.
check: $(TESTS)
	@scripts/check.sh

# The README's commands.  Each script is idempotent and says what it does.
deps:
	@scripts/install-deps.sh

test:
	@scripts/test.sh

run:
	@scripts/run.sh

stop:
	@scripts/stop.sh

clean-data:
	@scripts/clean-data.sh

template: all
	@rootfs/build-template.sh

bench:
	@scripts/bench.sh

clean:
	rm -rf build build-san

.PHONY: all unit check deps test run stop clean-data template bench clean
