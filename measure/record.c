/* What an invocation's record says beside the gate (measure/record.h). */
#include "measure/record.h"

#include <cjson/cJSON.h>

#include "results/store.h"

void measure_record_where(results_record_in *in, const conf_box *box)
{
	bool local = box->transport == CONF_TRANSPORT_LOCAL;
	in->version = BOXGATE_VERSION;
	in->box = box->name;
	in->host = local ? "localhost" : box->hostname;
	in->transport = local ? "local" : "ssh";
}

void measure_record_point(results_record_in *in, const measure_point *m, bool baseline, bool warmup,
			  int i, int n, const struct cJSON *overlay)
{
	in->repeat_i = i;
	in->repeat_n = warmup ? 0 : n;
	in->warmup = warmup;
	in->role = !m->apart ? NULL : baseline ? "baseline" : "candidate";
	in->overlay = baseline ? NULL : overlay;
	if (!in->exit_code || !in->why)
		in->why = "";
}

int measure_record_append(const char *path, const results_record_in *in, bg_err *err)
{
	cJSON *rec = results_record_build(in);
	int rc = results_append_json(path, rec, err);
	cJSON_Delete(rec);
	return rc;
}
