/* appendburst FILE N [AT FIFO HOLD]: appends N records to FILE through the
 * results store, as fast as it can, so that a test can SIGKILL it mid-burst.
 * With AT, after AT records it writes one byte to FIFO (the test waits on
 * it, so its kill is sure to find the burst under way) and then, with HOLD
 * 1, waits there for the kill; with HOLD 0 it goes on appending, racing
 * the kill. Built by t47-results.sh against build/libboxgate.a. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "results/store.h"

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 6) {
		fprintf(stderr, "usage: appendburst FILE N [AT FIFO HOLD]\n");
		return 2;
	}
	int n = atoi(argv[2]);
	int at = argc == 6 ? atoi(argv[3]) : -1;
	char pad[2048];
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	for (int i = 0; i < n; i++) {
		if (i == at) {
			int fd = open(argv[4], O_WRONLY);
			if (fd < 0 || write(fd, "p", 1) != 1) {
				perror(argv[4]);
				return 1;
			}
			close(fd);
			while (atoi(argv[5]))
				pause();
		}
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
