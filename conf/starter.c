/* The starter boxgate.ini `boxgate init` writes: every setting a new user
 * needs, commented out with "; " so that removing that prefix from every
 * line gives a file that loads (tests/integration/t19-init.sh checks it);
 * prose comments start with '#'. Nothing from outside (the directory's
 * name, ssh_config's Host names) can end a line: the directory is escaped,
 * and host names are box names (sshcfg_host_names keeps only those). */
#include "conf/conf.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

static const char head[] =
	"# boxgate configuration for %s, written by `boxgate init`.\n"
	"# boxgate finds this file from this directory and every directory below it.\n"
	"# Lines starting with '; ' are settings to take: remove the '; '.\n"
	"# Every key is described in boxgate(1), section CONFIGURATION;\n"
	"# `boxgate config check` prints what this file resolves to.\n"
	"\n"
	"[defaults]\n"
	"; known_hosts = ~/.ssh/known_hosts ~/.ssh/known_hosts2\n"
	"; host_key_check = strict        ; strict | accept-new (record unknown keys)\n"
	"; connect_timeout_s = 10\n"
	"; gate_timeout_s = 420           ; the watchdog on the box kills the gate after this\n"
	"; results = runs/results.jsonl   ; where `boxgate run` records, relative to this file\n"
	"; max_cv = 2                     ; run --repeat: NOISY above this slowCTA CV (%%)\n"
	"\n"
	"# The built-in box `local` runs gates on this machine; name its GPUs here.\n"
	"; [box local]\n"
	"; gpus = 0\n";

static const char box_fmt[] =
	"\n"
	"; [box %s]\n"
	"; host = %s\n"
	"; repo = /home/ubuntu/%s         ; the box's own copy of this repository\n"
	"; gate = scripts/faithful_eval.sh ; its gate, relative to repo\n"
	"; gpus = 0-7\n";

static const char verify_text[] =
	"\n"
	"# How a pushed file is checked on the box before it replaces the old one\n"
	"# ({} is the file, {python} the box's python; .py has this one built in).\n"
	"[verify]\n"
	"; .sh = bash -n {}\n";

/* A byte that must not reach the file as it is: a control character (a
 * newline would end the comment and start live configuration) or the
 * backslash that escapes one. */
static bool needs_escape(unsigned char c)
{
	return c < 0x20 || c == 0x7f || c == '\\';
}

/* `text` with each such byte written as \xNN, so it stays on its line. Owned. */
static char *escaped(const char *text)
{
	strbuf e = STRBUF_INIT;
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		if (needs_escape(*p))
			strbuf_addf(&e, "\\x%02x", *p);
		else
			strbuf_addch(&e, (char)*p);
	return strbuf_detach(&e);
}

char *conf_starter_text(const char *repo_dir, char *const *hosts, size_t n_hosts)
{
	strbuf s = STRBUF_INIT;
	const char *slash = strrchr(repo_dir, '/');
	const char *repo_name = slash && slash[1] ? slash + 1 : "REPO";
	/* The box's copy is only a suggestion: a name that would need escaping
	 * is left for the user to write. */
	for (const char *p = repo_name; *p; p++)
		if (needs_escape((unsigned char)*p))
			repo_name = "REPO";
	char *shown = escaped(repo_dir);
	strbuf_addf(&s, head, shown);
	free(shown);
	if (n_hosts) {
		strbuf_addstr(&s,
			      "\n# Hosts found in ~/.ssh/config; boxgate reaches each as ssh(1) "
			      "does.\n");
		for (size_t i = 0; i < n_hosts; i++)
			strbuf_addf(&s, box_fmt, hosts[i], hosts[i], repo_name);
		strbuf_addstr(&s, "\n# A pool: the GPU slots `run --pool` and campaigns share.\n"
				  "; [pool default]\n; slots = ");
		for (size_t i = 0; i < n_hosts; i++)
			strbuf_addf(&s, "%s%s:0-7", i ? ", " : "", hosts[i]);
		strbuf_addch(&s, '\n');
	} else {
		strbuf_addstr(&s, "\n# No Host in ~/.ssh/config: a box is written like this.\n");
		strbuf_addf(&s, box_fmt, "h200-a", "h200-a.example.org", repo_name);
	}
	strbuf_addstr(&s, verify_text);
	return strbuf_detach(&s);
}
