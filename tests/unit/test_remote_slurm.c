/* remote/slurm: every Slurm command line boxgate builds (the srun step, squeue,
 * scancel), each run through /bin/sh against stand-ins for srun and scancel
 * that print the words they got, so the quoting is checked by the shell that
 * will read it; the step name found again; squeue's output split. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <unistd.h>

#include "base/strbuf.h"
#include "remote/slurm.h"
#include "unit.h"

UNIT_SCRATCH_GROUP("slurm")

/* A stand-in for a Slurm command: prints SLURM_CONF, then each word on a line
 * of its own between < and >. */
static void stand_in(const char *name)
{
	char *p = xasprintf("%s/%s", tmpdir, name);
	write_text(p, "#!/bin/sh\n"
		      "printf 'conf<%s>\\n' \"${SLURM_CONF-unset}\"\n"
		      "for w in \"$@\"; do printf '<%s>\\n' \"$w\"; done\n");
	assert_int_equal(chmod(p, 0755), 0);
	free(p);
}

/* What /bin/sh -c `cmdline` prints with the stand-ins first in PATH (owned). */
static char *shell_run(const char *cmdline)
{
	stand_in("srun");
	stand_in("scancel");
	stand_in("squeue");
	strbuf cmd = STRBUF_INIT;
	strbuf_addf(&cmd, "PATH='%s':\"$PATH\"; HOME='%s'; export HOME; ", tmpdir, home);
	strbuf_addstr(&cmd, cmdline);
	char *path = xasprintf("%s/cmd.sh", tmpdir);
	write_text(path, cmd.buf);
	strbuf_release(&cmd);
	char *run = xasprintf("/bin/sh %s", path);
	FILE *f = popen(run, "r");
	assert_non_null(f);
	strbuf out = STRBUF_INIT;
	char buf[512];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		strbuf_add(&out, buf, n);
	assert_int_equal(pclose(f), 0);
	free(run);
	free(path);
	return strbuf_detach(&out);
}

static void step_words_survive_the_shell(void **state)
{
	(void)state;
	char *args[] = {"--time=5", "--comment=a b", "it's", "$HOME", "`id`", "x\ny", "*", ""};
	remote_slurm sl = {.conf = "~/slurm dir/slurm.conf",
			   .partition = "gpu; rm -rf /",
			   .gres = "gpu:h100:1",
			   .srun_args = args,
			   .n_srun_args = sizeof(args) / sizeof(*args)};
	strbuf s = STRBUF_INIT;
	remote_slurm_step(&s, &sl);
	/* the command that follows the prefix becomes srun's last words */
	strbuf_addstr(&s, "agent run");
	char name[64];
	assert_true(remote_slurm_job_name(s.buf, name, sizeof(name)));
	assert_int_equal(strlen(name), strlen(REMOTE_SLURM_JOB_PREFIX) + 16);
	assert_int_equal(strncmp(name, REMOTE_SLURM_JOB_PREFIX, strlen(REMOTE_SLURM_JOB_PREFIX)),
			 0);
	char *got = shell_run(s.buf);
	char *want =
		xasprintf("conf<%s/slurm dir/slurm.conf>\n"
			  "<--quiet>\n<--ntasks=1>\n<--job-name=%s>\n"
			  "<--gres>\n<gpu:h100:1>\n<--partition>\n<gpu; rm -rf />\n"
			  "<--time=5>\n<--comment=a b>\n<it's>\n<$HOME>\n<`id`>\n<x\ny>\n<*>\n<>\n"
			  "<agent>\n<run>\n",
			  home, name);
	assert_string_equal(got, want);
	free(got);
	free(want);
	/* each step gets a name of its own */
	strbuf t = STRBUF_INIT;
	remote_slurm_step(&t, &sl);
	char other[64];
	assert_true(remote_slurm_job_name(t.buf, other, sizeof(other)));
	assert_string_not_equal(name, other);
	strbuf_release(&s);
	strbuf_release(&t);
}

static void step_without_conf_or_partition(void **state)
{
	(void)state;
	remote_slurm sl = {.gres = "gpu:1"};
	strbuf s = STRBUF_INIT;
	remote_slurm_step(&s, &sl);
	assert_int_equal(strncmp(s.buf, "srun --quiet --ntasks=1 --job-name=boxgate-", 43), 0);
	assert_null(strstr(s.buf, "SLURM_CONF"));
	assert_null(strstr(s.buf, "--partition"));
	assert_non_null(strstr(s.buf, " --gres gpu:1 "));
	strbuf_release(&s);
}

static void job_name_refusals(void **state)
{
	(void)state;
	char name[64];
	assert_false(remote_slurm_job_name("agent run -- ./gate", name, sizeof(name)));
	assert_false(remote_slurm_job_name("srun --job-name=other-1 x", name, sizeof(name)));
	/* too long for the buffer: refused, not cut */
	char small[8];
	assert_false(remote_slurm_job_name("srun --job-name=boxgate-0123456789abcdef x", small,
					   sizeof(small)));
	/* the name ends where a character no name holds begins */
	assert_true(remote_slurm_job_name("srun --job-name=boxgate-ab12';x", name, sizeof(name)));
	assert_string_equal(name, "boxgate-ab12");
}

static void cancel_and_queue_commands(void **state)
{
	(void)state;
	remote_slurm sl = {.conf = "/etc/slurm/it's.conf"};
	char *cmd = remote_slurm_cancel_cmd(&sl, "boxgate-0123456789abcdef");
	char *got = shell_run(cmd);
	assert_string_equal(got, "conf</etc/slurm/it's.conf>\n<--name=boxgate-0123456789abcdef>\n");
	free(got);
	free(cmd);
	/* a hostile name is one word */
	remote_slurm none = {0};
	cmd = remote_slurm_cancel_cmd(&none, "x; touch pwned");
	got = shell_run(cmd);
	assert_string_equal(got, "conf<unset>\n<--name=x; touch pwned>\n");
	free(got);
	free(cmd);
	cmd = remote_slurm_queue_cmd(&none);
	got = shell_run(cmd);
	assert_string_equal(got, "conf<unset>\n<-h>\n<-o>\n<%i|%T|%b|%N|%M|%u|%j>\n");
	free(got);
	free(cmd);
}

static void queue_lines(void **state)
{
	(void)state;
	char out[] = "101|RUNNING|gres/gpu:1|node1|1:02|alice|boxgate-aa\n"
		     "102|PENDING|gres/gpu:1|(Priority)|0:00|bob|boxgate-bb\n"
		     "103|RUNNING|gres/gpu:1|node2|5:00|carol|interactive\n"
		     "104|RUNNING|short\n"
		     "\n"
		     "105|COMPLETING|||0:01|dan|boxgate-cc|extra|fields\n"
		     "106|RUNNING|g|n|t|u|boxgate-dd";
	remote_slurm_job *jobs = NULL;
	size_t n = remote_slurm_parse_queue(out, &jobs);
	assert_int_equal(n, 4);
	assert_string_equal(jobs[0].id, "101");
	assert_string_equal(jobs[0].state, "RUNNING");
	assert_string_equal(jobs[0].node, "node1");
	assert_string_equal(jobs[0].elapsed, "1:02");
	assert_string_equal(jobs[0].user, "alice");
	assert_string_equal(jobs[1].state, "PENDING");
	assert_string_equal(jobs[1].node, "(Priority)");
	/* empty fields stay fields; fields past the seventh are dropped */
	assert_string_equal(jobs[2].id, "105");
	assert_string_equal(jobs[2].gres, "");
	assert_string_equal(jobs[2].name, "boxgate-cc");
	/* a last line without a newline */
	assert_string_equal(jobs[3].id, "106");
	assert_string_equal(jobs[3].name, "boxgate-dd");
	free(jobs);
	char empty[] = "";
	assert_int_equal(remote_slurm_parse_queue(empty, &jobs), 0);
	assert_null(jobs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(step_words_survive_the_shell),
		cmocka_unit_test(step_without_conf_or_partition),
		cmocka_unit_test(job_name_refusals),
		cmocka_unit_test(cancel_and_queue_commands),
		cmocka_unit_test(queue_lines),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
