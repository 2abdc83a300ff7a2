/* campaign/boxes: a box's room for its jobs' gate views and its
 * candidates' overlays; each file candidate overlaid at the box's
 * kernel_paths entry for the gate kind, and refused, with the words the
 * user reads, when the gate arguments name no kind, the box has no kernel
 * path for it or no repo, the file is gone, or it changed since the
 * campaign read it; everything released. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "campaign/boxes.h"
#include "base/exit.h"
#include "unit.h"
#include "unit_conf.h"

UNIT_SCRATCH_GROUP("campaign-boxes")

static char *kernel_file(const char *text)
{
	return unit_file("k", ".cuh", text);
}

static void overlays_and_refusals(void **state)
{
	(void)state;
	char *k = kernel_file("__global__ void k() {}\n");
	char *paths[] = {"largem:src/kernels/largem.cuh", "other:src/o.cuh"};
	conf_box box = {.name = "g1",
			.repo = "/r",
			.file = "boxgate.ini",
			.kernel_paths = paths,
			.n_kernel_paths = 2};
	campaign_candidate cands[2] = {{.name = "baseline"},
				       {.name = "k", .file = k, .shown = "k.cuh"}};
	campaign_spec sp = {.file = "c.ini", .line = 3, .cands = cands, .n_cands = 2};

	/* what the campaign read: the file's SHA-256 as an overlay hashes it */
	overlay probe = {0};
	bg_err err = {0};
	assert_int_equal(overlay_add(&probe, k, "x.cuh", &err), 0);
	strcpy(cands[1].sha, probe.f[0].sha);
	overlay_release(&probe);

	sched_box sb = {.box = &box};
	campaign_box_init(&sb, 4, 2);
	assert_non_null(sb.gate);
	assert_true(sb.gate[3].bar == 0);
	assert_int_equal(campaign_box_candidates(&sb, &sp, "largem", &err), 0);
	assert_int_equal(sb.ov[1].n, 1);
	assert_string_equal(sb.ov[1].f[0].rel, "src/kernels/largem.cuh");
	assert_int_equal(sb.ov[0].n, 0); /* baseline: nothing overlaid */
	campaign_box_release(&sb, 2);
	assert_null(sb.gate);

	campaign_box_init(&sb, 1, 2);
	assert_int_equal(campaign_box_candidates(&sb, &sp, NULL, &err), BG_EUSAGE);
	assert_string_equal(err.msg, "campaign: c.ini:3: candidate k.cuh is a kernel file, and "
				     "the gate_args name no --kind to place it by");
	assert_int_equal(campaign_box_candidates(&sb, &sp, "tiny", &err), BG_EUSAGE);
	assert_string_equal(err.msg,
			    "campaign: box g1 names no kernel path for --kind tiny, so candidate "
			    "k.cuh has no place (add tiny:PATH to kernel_paths under [box g1] in "
			    "boxgate.ini)");
	/* a kind that is a prefix of another's is not it */
	assert_int_equal(campaign_box_candidates(&sb, &sp, "large", &err), BG_EUSAGE);
	campaign_box_release(&sb, 2);

	box.repo = NULL;
	campaign_box_init(&sb, 1, 2);
	assert_int_equal(campaign_box_candidates(&sb, &sp, "largem", &err), BG_EUSAGE);
	assert_string_equal(err.msg, "campaign: box g1 has no repo for candidate k.cuh's overlay");
	campaign_box_release(&sb, 2);
	box.repo = "/r";

	/* changed since the campaign read it */
	FILE *f = fopen(k, "a");
	assert_non_null(f);
	fputs("// edited\n", f);
	fclose(f);
	campaign_box_init(&sb, 1, 2);
	assert_int_equal(campaign_box_candidates(&sb, &sp, "largem", &err), BG_EUSAGE);
	assert_string_equal(err.msg,
			    "campaign: candidate k.cuh changed while the campaign read it; run it "
			    "again");
	campaign_box_release(&sb, 2);

	/* gone */
	assert_int_equal(unlink(k), 0);
	campaign_box_init(&sb, 1, 2);
	assert_int_equal(campaign_box_candidates(&sb, &sp, "largem", &err), BG_EUSAGE);
	assert_true(strncmp(err.msg, "campaign: candidate k.cuh: ", 27) == 0);
	campaign_box_release(&sb, 2);

	/* the candidate is now a directory */
	assert_int_equal(mkdir(k, 0700), 0);
	campaign_box_init(&sb, 1, 2);
	assert_int_equal(campaign_box_candidates(&sb, &sp, "largem", &err), BG_EUSAGE);
	assert_true(strncmp(err.msg, "campaign: candidate k.cuh: ", 27) == 0);
	campaign_box_release(&sb, 2);
	rmdir(k);

	/* a kernel_paths entry with an empty path */
	FILE *g = fopen(k, "w");
	assert_non_null(g);
	fputs("__global__ void k() {}\n", g);
	fclose(g);
	char *empty[] = {"largem:"};
	box.kernel_paths = empty;
	box.n_kernel_paths = 1;
	campaign_box_init(&sb, 1, 2);
	assert_int_equal(campaign_box_candidates(&sb, &sp, "largem", &err), BG_EUSAGE);
	campaign_box_release(&sb, 2);
	unlink(k);

	/* no candidates at all: nothing to do, and release of a box never prepared */
	campaign_spec none = {.file = "c.ini"};
	campaign_box_init(&sb, 0, 0);
	assert_int_equal(campaign_box_candidates(&sb, &none, NULL, &err), 0);
	campaign_box_release(&sb, 0);
	sched_box bare = {.box = &box};
	campaign_box_release(&bare, 2);
	free(k);
}

/* Every job through every box's shim before anything connects: the views
 * each box's gates point into, the job and box a refusal names, everything
 * released either way. */
static void prepare_every_box(void **state)
{
	(void)state;
	conf cf;
	unit_conf_load(&cf,
		       "[box g]\nhost = h\nrepo = /r\ngate = gate.py\ngpus = 0\nallow = --shape\n"
		       "[box nogate]\nhost = h3\nrepo = /r\n");
	gate_agent agent = {.binary = (char *)"/lx/boxgate-agent",
			    .source = (char *)"/lx/boxgate-agent.c",
			    .libexec = (char *)"/lx"};
	char *w0[] = {"--shape", "a", NULL}, *w1[] = {"--shape", "b", NULL};
	campaign_job jobs[2] = {{.key = "j0", .words = w0, .n_words = 2},
				{.key = "j1", .words = w1, .n_words = 2}};
	campaign_candidate cands[1] = {{.name = "baseline"}};
	campaign_spec sp = {.name = "c",
			    .file = "c.ini",
			    .line = 3,
			    .cands = cands,
			    .n_cands = 1,
			    .timeout_s = 60,
			    .bar = 0.9};
	sched s = {.jobs = jobs, .n_jobs = 2, .n_boxes = 1};
	s.boxes = xcalloc(2, sizeof(*s.boxes));
	s.boxes[0].box = conf_find_box(&cf, "g");
	s.boxes[1].box = conf_find_box(&cf, "nogate");
	campaign_box_args ba = {0};
	bg_err err = {0};
	if (campaign_boxes_prepare(&cf, &sp, "campaign", false, &agent, &s, &ba, &err) != 0)
		fail_msg("refused: %s", err.msg);
	assert_int_equal(ba.n, 2);
	assert_true(ba.ok[0] && ba.ok[1]);
	assert_int_equal(ba.bad_job, SIZE_MAX);
	assert_true(s.boxes[0].gate[1].bar == 0.9);
	assert_int_equal(ba.ga[1].timeout_s, 60);
	assert_string_equal(ba.ga[0].box->name, "g");
	campaign_boxes_release(&s, 1, &ba);

	/* the second box has no gate: its first job is refused, named */
	s.n_boxes = 2;
	s.boxes = xcalloc(2, sizeof(*s.boxes));
	s.boxes[0].box = conf_find_box(&cf, "g");
	s.boxes[1].box = conf_find_box(&cf, "nogate");
	memset(&ba, 0, sizeof(ba));
	int code = campaign_boxes_prepare(&cf, &sp, "campaign", false, &agent, &s, &ba, &err);
	assert_int_equal(code, BG_EXIT_USAGE);
	assert_int_equal(ba.bad_box, 1);
	assert_int_equal(ba.bad_job, 0);
	assert_true(err.msg[0] != '\0');
	assert_false(ba.ok[3]); /* the refusal stops the rest */
	campaign_boxes_release(&s, 1, &ba);
	conf_release(&cf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(overlays_and_refusals),
		cmocka_unit_test(prepare_every_box),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
