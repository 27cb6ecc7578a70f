/* HTTP statuses: reason phrases and error codes; see http_status.h. */
#include "http_status.h"

#include <stddef.h>

static const struct {
	int status;
	const char *reason;
	const char *code; /* NULL: not an error */
} statuses[] = {
	{200, "OK", NULL},
	{201, "Created", NULL},
	{202, "Accepted", NULL},
	{204, "No Content", NULL},
	{302, "Found", NULL},
	{400, "Bad Request", "bad_request"},
	{401, "Unauthorized", "unauthorized"},
	{403, "Forbidden", "forbidden"},
	{404, "Not Found", "not_found"},
	{405, "Method Not Allowed", "method_not_allowed"},
	{408, "Request Timeout", "request_timeout"},
	{409, "Conflict", "conflict"},
	{410, "Gone", "gone"},
	{413, "Content Too Large", "payload_too_large"},
	{414, "URI Too Long", "uri_too_long"},
	{431, "Request Header Fields Too Large", "headers_too_large"},
	{500, "Internal Server Error", "internal"},
	{501, "Not Implemented", "not_implemented"},
	{502, "Bad Gateway", "bad_gateway"},
	{503, "Service Unavailable", "unavailable"},
	{504, "Gateway Timeout", "timeout"},
	{505, "HTTP Version Not Supported", "http_version_not_supported"},
	{507, "Insufficient Storage", "insufficient_storage"},
};

const char *http_status_reason(int status)
{
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
		if (statuses[i].status == status)
			return statuses[i].reason;
	return "Error";
}

const char *http_status_code(int status)
{
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
		if (statuses[i].status == status && statuses[i].code)
			return statuses[i].code;
	return status >= 500 && status <= 599 ? "internal" : "error";
}
