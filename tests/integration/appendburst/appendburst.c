/* appendburst FILE N: appends N records to FILE through the results store,
 * as fast as it can, so that a test can SIGKILL it mid-burst. Built by
 * t47-results.sh against build/libboxgate.a. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "results/store.h"

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: appendburst FILE N\n");
		return 2;
	}
	int n = atoi(argv[2]);
	char pad[2048];
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	for (int i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "schema", 1);
		cJSON_AddNumberToObject(o, "pid", (double)getpid());
		cJSON_AddNumberToObject(o, "seq", i);
		cJSON_AddStringToObject(o, "pad", pad);
		bg_err err = {0};
		int rc = results_append_json(argv[1], o, &err);
		cJSON_Delete(o);
		if (rc < 0) {
			fprintf(stderr, "appendburst: %s\n", err.msg);
			return 1;
		}
	}
	return 0;
}
