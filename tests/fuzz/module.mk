# tests/fuzz/: libFuzzer targets for the parsers that read what peers and
# templates send.  Built with clang (libFuzzer needs it) straight from the
# sources they cover, with ASan+UBSan; not part of `all`.
#   make fuzz                   build and run each target for FUZZ_SECONDS (30)
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 30
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -I. -Wall -Wextra -Werror \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	$(call pc_cflags,jansson)
FUZZ_LIBS := $(call pc_libs,jansson)
FUZZ_COMMON := common/err.c common/util.c common/buf.c

FUZZ_SRCS_init-config := tests/fuzz/fuzz_init_config.c appliance/init/config.c
FUZZ_SRCS_mcp-message := tests/fuzz/fuzz_mcp_message.c common/json.c mcp/lib/jsonrpc.c \
	mcp/lib/schema.c common/hostcheck.c
FUZZ_SRCS_cfg-file := tests/fuzz/fuzz_cfg_file.c common/cfg.c
FUZZ_SRCS_egress := tests/fuzz/fuzz_egress.c node-agent/na_egress_policy.c node-agent/na_egress_http.c \
	common/http1_head.c common/log.c
FUZZ_SRCS_btrfs-stream := tests/fuzz/fuzz_btrfs_stream.c node-agent/na_btrfs.c node-agent/na_cmd.c \
	common/log.c
FUZZ_SRCS_px-head := tests/fuzz/fuzz_px_head.c common/http1_head.c proxy/px_host.c proxy/px_chunk.c \
	proxy/px_rewrite.c
FUZZ_SRCS_s3-list := tests/fuzz/fuzz_s3_list.c node-agent/na_s3.c common/log.c common/digest.c
FUZZ_LIBS_s3-list := $(call pc_libs,libcurl libcrypto)
FUZZ_SRCS_b64 := tests/fuzz/fuzz_b64.c common/b64.c
FUZZ_SRCS_route := tests/fuzz/fuzz_route.c common/http_server.c common/http_status.c common/log.c \
	common/listenfd.c
FUZZ_LIBS_route := $(call pc_libs,libwebsockets)
FUZZ_SRCS_vnc-request := tests/fuzz/fuzz_vnc_request.c appliance/vnc/request.c \
	common/http1_head.c common/hostcheck.c common/secret.c
FUZZ_TARGETS := init-config mcp-message cfg-file egress btrfs-stream px-head s3-list b64 route vnc-request

.SECONDEXPANSION:
$(BUILD)/fuzz/fuzz-%: $$(FUZZ_SRCS_%) $(FUZZ_COMMON) tests/fuzz/module.mk
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(FUZZ_SRCS_$*) $(FUZZ_COMMON) $(FUZZ_LIBS) $(FUZZ_LIBS_$*)

fuzz: $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz-%)
	@rc=0; for t in $(FUZZ_TARGETS); do \
		mkdir -p $(BUILD)/fuzz/corpus-$$t; \
		if $(BUILD)/fuzz/fuzz-$$t -max_total_time=$(FUZZ_SECONDS) -max_len=8192 \
			-print_final_stats=1 $(BUILD)/fuzz/corpus-$$t tests/fuzz/corpus/$$t \
			>$(BUILD)/fuzz/fuzz-$$t.log 2>&1; then \
			echo "ok - fuzz-$$t: $$(sed -n 's/^stat::number_of_executed_units: *//p' $(BUILD)/fuzz/fuzz-$$t.log) inputs in $(FUZZ_SECONDS) s, no crash, leak or UB"; \
		else \
			echo "not ok - fuzz-$$t (see $(BUILD)/fuzz/fuzz-$$t.log; the input is saved as crash-*)"; \
			tail -n 30 $(BUILD)/fuzz/fuzz-$$t.log | sed 's/^/# /'; rc=1; \
		fi; \
	done; exit $$rc

.PHONY: fuzz
