/* The campaigns holding slots (campaign/holders.h). */
#include "campaign/holders.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/xmalloc.h"
#include "campaign/state.h"

#define CAMPAIGN_TAG "campaign:"

/* The campaign name of a holder tag "campaign:NAME user@host:pid" (owned),
 * NULL when the tag is no campaign's. */
static char *campaign_of(const char *tag)
{
	size_t k = strlen(CAMPAIGN_TAG);
	if (!tag || strncmp(tag, CAMPAIGN_TAG, k) != 0 || !tag[k] || tag[k] == ' ')
		return NULL;
	return xstrndup(tag + k, strcspn(tag + k, " "));
}

/* The job a detached campaign of this client runs on slot LABEL ("box:slot"),
 * from its state file; NULL when it is not running here or names none. */
static char *detached_job(const char *dir, const char *name, const char *label, bool *detached)
{
	cJSON *st = NULL;
	bg_err err = {0};
	*detached = false;
	/* a name from a lock file on the box is never a path here */
	if (!dir || strchr(name, '/') || name[0] == '.' || !campaign_state_running(dir, name) ||
	    campaign_state_read(dir, name, &st, &err) < 0)
		return NULL;
	*detached = true;
	char *job = NULL;
	const cJSON *r;
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(st, "running"))
	{
		const char *slot = bg_json_str(r, "slot"), *j = bg_json_str(r, "job");
		if (slot && j && strcmp(slot, label) == 0 && !job)
			job = xstrdup(j);
	}
	cJSON_Delete(st);
	return job;
}

void campaign_note_holders(slot_probe *jobs, size_t n)
{
	char *dir = campaign_state_dir_peek();
	for (size_t i = 0; i < n; i++) {
		cJSON *row;
		cJSON_ArrayForEach(row, jobs[i].rows)
		{
			const char *state = bg_json_str(row, "state"),
				   *slot = bg_json_str(row, "slot");
			char *name = state && strcmp(state, "held") == 0
					     ? campaign_of(bg_json_str(row, "tag"))
					     : NULL;
			if (!name)
				continue;
			cJSON_AddStringToObject(row, "campaign", name);
			char *label = xasprintf("%s:%s", jobs[i].box->name, slot ? slot : "?");
			bool detached;
			char *job = detached_job(dir, name, label, &detached);
			if (detached)
				cJSON_AddBoolToObject(row, "campaign_detached", 1);
			if (job)
				cJSON_AddStringToObject(row, "campaign_job", job);
			free(job);
			free(label);
			free(name);
		}
	}
	free(dir);
}
