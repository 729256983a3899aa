/*
 * fuzz_json.c — fuzz harness of the client socket's JSON request path
 * (core/proto_json.c) as serve_json.c runs it: fsb_json_precheck, then
 * fsb_json_parse_object, then fsb_hostop_parse and fsb_hostop_free; the
 * reply helper fsb_json_add_path gets every path a request held. A
 * validated request must name the fields its operation needs.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "proto_json.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

/* Put the decoded paths back into a reply, as the replies do. */
static void reply_with(const struct fsb_hostop_req *req)
{
	cJSON *reply = cJSON_CreateObject();
	char *s;

	if (reply == NULL)
		return;
	if (req->path != NULL)
		fsb_json_add_path(reply, "path", req->path, req->path_bytes);
	if (req->from != NULL)
		fsb_json_add_path(reply, "from", req->from, req->from_bytes);
	if (req->to != NULL)
		fsb_json_add_path(reply, "to", req->to, req->to_bytes);
	s = cJSON_PrintUnformatted(reply);
	free(s);
	cJSON_Delete(reply);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fsb_hostop_req req;
	const char *why = NULL;
	char *line = malloc(size + 1);
	cJSON *obj;

	if (line == NULL)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	/* The precheck alone, on the exact bytes (it must not read past them). */
	if (fsb_json_precheck(line, size, &why) < 0 && why == NULL)
		abort();
	obj = fsb_json_parse_object(line, size, &why);
	if (obj == NULL) {
		if (why == NULL)
			abort();
		free(line);
		return 0;
	}
	if (fsb_hostop_parse(obj, &req, &why) == 0) {
		switch (req.op) {
		case FSB_HOSTOP_RENAME:
		case FSB_HOSTOP_COPY:
		case FSB_HOSTOP_LINK:
			if (req.from == NULL || req.to == NULL || req.to[0] != '/')
				abort();
			break;
		default:
			if (req.path == NULL || req.path[0] != '/')
				abort();
		}
		(void)fsb_hostop_name(req.op);
		reply_with(&req);
		fsb_hostop_free(&req);
	} else if (why == NULL) {
		abort();
	}
	cJSON_Delete(obj);
	free(line);
	return 0;
}
