#include "gate/client/agent_install.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/sha256.h"
#include "base/strbuf.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "gate/agent_proto.h"
#include "shim/shim.h"

static bool is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int gate_agent_locate(gate_agent *a, bg_err *err)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	memset(a, 0, sizeof(*a));
	if (n <= 0)
		return bg_fail(err, BG_EIO, "cannot find the boxgate binary: %s", strerror(errno));
	exe[n] = '\0';
	char *dir = dirname(exe);
	/* An installed boxgate: PREFIX/bin/boxgate with PREFIX/libexec/boxgate/;
	 * a build tree: build/boxgate with the agent's one generated source in
	 * build/gen/ (gate/agent/gen.sh). */
	char *cands[][2] = {
		{xasprintf("%s/../libexec/boxgate", dir),
		 xasprintf("%s/../libexec/boxgate/boxgate-agent.c", dir)},
		{xstrdup(dir), xasprintf("%s/gen/boxgate-agent.c", dir)},
	};
	int rc = 0;
	for (size_t i = 0; i < 2; i++) {
		char *bin = xasprintf("%s/boxgate-agent", cands[i][0]);
		if (!a->binary && is_file(bin) && is_file(cands[i][1])) {
			a->binary = bin;
			a->source = cands[i][1];
			a->libexec = cands[i][0];
			cands[i][0] = cands[i][1] = NULL;
		} else {
			free(bin);
		}
		free(cands[i][0]);
		free(cands[i][1]);
	}
	if (!a->binary)
		return bg_fail(err, BG_ENOTFOUND,
			       "boxgate-agent and its source were not found beside %s (run make, "
			       "or make install)",
			       exe);
	rc = bg_sha256_file(a->source, a->sha, err);
	if (rc < 0)
		gate_agent_release(a);
	return rc;
}

void gate_agent_release(gate_agent *a)
{
	free(a->binary);
	free(a->source);
	free(a->libexec);
	memset(a, 0, sizeof(*a));
}

const char *gate_agent_how_name(gate_agent_how how)
{
	switch (how) {
	case AGENT_PRESENT: return "present";
	case AGENT_UPLOADED: return "installed (prebuilt)";
	case AGENT_COMPILED: return "installed (compiled on the box)";
	case AGENT_LOCAL: return "local";
	}
	return "?";
}

static int read_file(const char *path, strbuf *out, bg_err *err)
{
	char buf[65536];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return bg_fail(err, BG_EIO, "%s: %s", path, strerror(errno));
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		strbuf_add(out, buf, (size_t)n);
	close(fd);
	return n < 0 ? bg_fail(err, BG_EIO, "%s: read error", path) : 0;
}

/* Runs `script` with the file at `input` on stdin; returns the exit code
 * (or negative). */
static int run_with_file(remote_conn *c, const char *script, const char *input, bg_err *err)
{
	strbuf data = STRBUF_INIT;
	remote_exec *e = NULL;
	remote_status st = {0};
	int rc = read_file(input, &data, err);
	if (rc < 0)
		goto out;
	rc = remote_exec_start(c, script, NULL, &e, err);
	if (rc < 0)
		goto out;
	remote_exec_write(e, data.buf, data.len);
	remote_exec_close_stdin(e);
	rc = remote_exec_wait(e, bg_deadline_ms(120000), &st, err);
	remote_exec_free(e);
	if (rc < 0)
		goto out;
	if (rc == 0)
		rc = bg_fail(err, BG_ETIMEOUT, "%s: installing the agent timed out",
			     remote_target_of(c)->name);
	else
		rc = st.how == REMOTE_EXITED ? st.code : 128;
out:
	strbuf_release(&data);
	return rc;
}

/* Shell: "the agent at %s (taken three times) is ours": a file, executable,
 * and its version line an agent's (not any program that exits 0). */
#define AGENT_CHECK                                                                                \
	"test -f %s && test -x %s && case $(%s " AGENT_CMD_VERSION " 2>/dev/null) in "             \
	"'boxgate-agent '*) true ;; *) false ;; esac"

/* Shell: a directory or a symlink in the agent's place (neither is an agent)
 * goes first, so that mv replaces it rather than moving into it. Takes the
 * path three times. */
#define CLEAR_PLACE "{ { [ ! -d %s ] && [ ! -L %s ]; } || rm -rf -- %s; } &&"

/* The upload's exit status when ~/.cache/boxgate cannot take a file. */
#define NO_ROOM_EXIT 4

int gate_agent_ensure(remote_conn *c, const gate_agent *a, bool force, char **path,
		      gate_agent_how *how, bg_err *err)
{
	const remote_target *b = remote_target_of(c);
	strbuf p = STRBUF_INIT, s = STRBUF_INIT;
	char rel[128];
	int rc = 0;

	*path = NULL;
	if (b->transport == REMOTE_TRANSPORT_LOCAL) {
		bg_quote(&p, a->binary);
		*path = strbuf_detach(&p);
		*how = AGENT_LOCAL;
		return 0;
	}
	snprintf(rel, sizeof(rel), "~/.cache/boxgate/agent-%.16s", a->sha);
	bg_quote_path(&p, rel);
	const char *ap = strbuf_str(&p);

	/* One round trip when the right agent is already there. */
	if (!force) {
		strbuf_addf(&s, AGENT_CHECK, ap, ap, ap);
		remote_status st;
		rc = remote_run(c, s.buf, NULL, NULL, 30000, &st, err);
		if (rc < 0)
			goto out;
		if (st.how == REMOTE_EXITED && st.code == 0) {
			*how = AGENT_PRESENT;
			goto done;
		}
	}
	/* Upload to a temp file, prove it runs, rename over: never half an agent. */
	strbuf_reset(&s);
	strbuf_addf(&s,
		    "umask 077; { mkdir -p \"$HOME/.cache/boxgate\" && t=$(mktemp "
		    "\"$HOME/.cache/boxgate/.agent.XXXXXX\"); } 2>/dev/null || exit %d; "
		    "cat >\"$t\" && chmod 755 \"$t\" && \"$t\" " AGENT_CMD_VERSION
		    " >/dev/null 2>&1 && " CLEAR_PLACE " mv -f \"$t\" %s "
		    "|| { rm -f \"$t\"; exit 3; }",
		    NO_ROOM_EXIT, ap, ap, ap, ap);
	rc = run_with_file(c, s.buf, a->binary, err);
	if (rc < 0)
		goto out;
	if (rc == 0) {
		*how = AGENT_UPLOADED;
		goto done;
	}
	if (rc == NO_ROOM_EXIT) {
		rc = bg_fail(
			err, BG_EREMOTE,
			"%s: cannot write the agent into ~/.cache/boxgate on the box (is $HOME "
			"writable, the disk not full?)",
			b->name);
		goto out;
	}
	/* Another architecture or libc: build it there from the same source. */
	strbuf_reset(&s);
	strbuf_addf(&s,
		    "umask 077; mkdir -p \"$HOME/.cache/boxgate\" && d=$(mktemp -d "
		    "\"$HOME/.cache/boxgate/.build.XXXXXX\") "
		    "&& cat >\"$d/a.c\" && ${CC:-cc} -O2 -std=c11 -D_GNU_SOURCE -o \"$d/a\" "
		    "\"$d/a.c\" -ldl -lm "
		    "&& \"$d/a\" " AGENT_CMD_VERSION " >/dev/null && " CLEAR_PLACE
		    " mv -f \"$d/a\" %s; r=$?; rm -rf \"$d\"; exit $r",
		    ap, ap, ap, ap);
	rc = run_with_file(c, s.buf, a->source, err);
	if (rc < 0)
		goto out;
	if (rc != 0) {
		rc = bg_fail(err, BG_EREMOTE,
			     "%s: the prebuilt agent does not run there and compiling it with the "
			     "box's cc "
			     "failed (exit %d); install a C compiler on the box",
			     b->name, rc);
		goto out;
	}
	*how = AGENT_COMPILED;
done:
	rc = 0;
	*path = strbuf_detach(&p);
out:
	strbuf_release(&p);
	strbuf_release(&s);
	return rc;
}

char *gate_agent_probe(remote_conn *c, const gate_agent *a, char **path)
{
	*path = NULL;
	if (remote_target_of(c)->transport == REMOTE_TRANSPORT_LOCAL)
		return NULL;
	char rel[128];
	strbuf p = STRBUF_INIT;
	snprintf(rel, sizeof(rel), "~/.cache/boxgate/agent-%.16s", a->sha);
	bg_quote_path(&p, rel);
	/* Builtins only, no fork: whether the file there is an agent (the same
	 * content-addressed one) the run itself tells, by its framed lines. */
	char *guard = xasprintf("test -f %s && test -x %s", p.buf, p.buf);
	*path = strbuf_detach(&p);
	return guard;
}

int gate_agent_capture(remote_conn *c, const gate_agent *a, const char *args, char **path,
		       char **out, bg_err *err)
{
	const remote_target *b = remote_target_of(c);
	remote_status st;
	gate_agent_how how;
	*path = NULL;
	*out = NULL;
	if (b->transport != REMOTE_TRANSPORT_LOCAL) {
		char rel[128];
		strbuf p = STRBUF_INIT, s = STRBUF_INIT;
		snprintf(rel, sizeof(rel), "~/.cache/boxgate/agent-%.16s", a->sha);
		bg_quote_path(&p, rel);
		strbuf_addf(&s, "{ " AGENT_CHECK "; } || exit %d; %s %s", p.buf, p.buf, p.buf,
			    GATE_AGENT_ABSENT_EXIT, p.buf, args);
		bg_err e = {0};
		int rc = remote_capture(c, s.buf, 1 << 20, 60000, out, NULL, &st, &e);
		strbuf_release(&s);
		if (rc == 0 || !(st.how == REMOTE_EXITED && st.code == GATE_AGENT_ABSENT_EXIT)) {
			if (rc < 0)
				*err = e;
			*path = strbuf_detach(&p);
			return rc;
		}
		strbuf_release(&p);
		free(*out);
		*out = NULL;
	}
	int rc = gate_agent_ensure(c, a, false, path, &how, err);
	if (rc == 0) {
		char *cmd = xasprintf("%s %s", *path, args);
		rc = remote_capture(c, cmd, 1 << 20, 60000, out, NULL, &st, err);
		free(cmd);
	}
	return rc;
}
