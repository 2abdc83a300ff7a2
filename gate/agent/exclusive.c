/* Exclusivity: no foreign compute process on the slot's GPUs before the
 * gate starts, none of ours after it is stopped. */
#include "gate/agent/child.h"
#include "gate/agent/slots.h"

static void invalid_no_gpu(struct run *r, const char *detail)
{
	if (!r->require_gpu) {
		msg("no GPU check: %s (going on: --require-gpu no)", detail);
		return;
	}
	strbuf b = STRBUF_INIT;
	strbuf_addf(&b,
		    "%s" AGENT_RESULT_PREFIX
		    "{\"verdict\":\"INVALID\",\"reason\":\"" AGENT_REASON_NO_GPU "\",\"detail\":\"",
		    g_frame);
	json_escape(&b, detail);
	strbuf_addf(&b, "\"}\n");
	msg("INVALID: no GPU: %s", detail);
	out_line(&g_out[0], b.buf, b.len);
	strbuf_release(&b);
	lock_release(r);
	agent_exit(AGENT_EXIT_INVALID);
}

void check_exclusive(struct run *r)
{
	if (!r->ngpus && !r->require_gpu)
		return;
	nvml_open(&r->nv);
	if (!r->nv.ok) {
		invalid_no_gpu(r, r->nv.why);
		return;
	}
	r->have_nvml = 1;
	unsigned count;
	if (nvml_count(&r->nv, &count) < 0 || count == 0) {
		invalid_no_gpu(r, "NVML finds no GPU");
		return;
	}
	struct gpu_proc *v = NULL;
	int n = 0;
	for (int g = 0; g < r->ngpus; g++) {
		char why[256];
		if ((unsigned)r->gpus[g] >= count) {
			snprintf(why, sizeof why, "gpu %d not present (%u GPUs)", r->gpus[g],
				 count);
			invalid_no_gpu(r, why);
			continue;
		}
		if (nvml_list(&r->nv, r->gpus[g], &v, &n, why, sizeof why) < 0)
			invalid_no_gpu(r, why);
	}
	if (n) {
		for (int i = 0; i < n; i++)
			msg("gpu %d busy: compute process pid %u (%s, %lld MiB)", v[i].gpu,
			    v[i].pid, v[i].name, v[i].mem_mib);
		strbuf b = STRBUF_INIT;
		strbuf_addf(&b,
			    "%s" AGENT_RESULT_PREFIX
			    "{\"verdict\":\"INVALID\",\"reason\":\"" AGENT_REASON_GPU_BUSY
			    "\",\"gpu\":%d,\"pid\":%u,"
			    "\"process\":\"",
			    g_frame, v[0].gpu, v[0].pid);
		json_escape(&b, v[0].name);
		strbuf_addf(&b, "\"}\n");
		out_line(&g_out[0], b.buf, b.len);
		strbuf_release(&b);
		free(v);
		lock_release(r);
		agent_exit(AGENT_EXIT_INVALID);
	}
	free(v);
}

/* Still on the slot's GPUs: a killed pid, or a pid this namespace cannot see (it may be
 * one of ours seen through another pid namespace). Returns 1 when free, 0 when not,
 * -1 when NVML cannot tell. */
int gpu_free_now(struct run *r, strbuf *why)
{
	struct gpu_proc *v = NULL;
	int n = 0, freed = 1;
	for (int g = 0; g < r->ngpus; g++) {
		char e[256];
		if (nvml_list(&r->nv, r->gpus[g], &v, &n, e, sizeof e) < 0) {
			free(v);
			return -1;
		}
	}
	for (int i = 0; i < n; i++) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%u", v[i].pid);
		if (killed_has(r, (pid_t)v[i].pid) || access(path, F_OK) < 0) {
			freed = 0;
			if (why)
				strbuf_addf(why, " pid %u (%s) on gpu %d", v[i].pid, v[i].name,
					    v[i].gpu);
		}
	}
	free(v);
	return freed;
}
