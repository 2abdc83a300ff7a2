/* boxgate init: a commented starter boxgate.ini at the repository's root. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "conf/sshconfig.h"

static const char init_help[] =
	"usage: boxgate init [--force] [--stdout]\n"
	"\n"
	"Writes a commented starter boxgate.ini at the root of the git repository holding\n"
	"the working directory (the nearest directory upward with a .git), else in the\n"
	"working directory. Every setting in it is commented out with '; '; each Host that\n"
	"~/.ssh/config names (not patterns) is offered as a commented-out [box], with a\n"
	"pool of them all. An existing boxgate.ini is never overwritten (exit 1) unless\n"
	"--force is given; the file appears whole or not at all.\n"
	"\n"
	"  --force    replace an existing boxgate.ini\n"
	"  --stdout   print the starter file instead of writing it\n";

struct init_opts {
	bool force;
	bool to_stdout;
};

static const cli_opt init_options[] = {
	CLI_OPT_FLAG("force", struct init_opts, force),
	CLI_OPT_FLAG("stdout", struct init_opts, to_stdout),
	CLI_OPT_END,
};

/* The nearest directory from `dir` upward holding .git (a directory, or the
 * file a worktree has), else NULL. Owned. */
static char *repo_root(const char *dir)
{
	char *d = xstrdup(dir);
	for (;;) {
		struct stat st;
		char *git = xasprintf("%s/.git", strcmp(d, "/") == 0 ? "" : d);
		bool found = stat(git, &st) == 0;
		free(git);
		if (found)
			return d;
		char *slash = strrchr(d, '/');
		if (!slash || strcmp(d, "/") == 0) {
			free(d);
			return NULL;
		}
		if (slash == d)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
}

/* Writes `text` to `path` through a temporary file beside it: link(2) when
 * an existing file must be kept (atomic no-clobber), rename(2) with force. */
static int write_whole(const char *path, const char *text, bool force)
{
	char *tmp = xasprintf("%s.init-%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	int err = 0;
	if (fd < 0) {
		err = errno;
		goto out;
	}
	size_t len = strlen(text), off = 0;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? errno : EIO;
			break;
		}
		off += (size_t)n;
	}
	if (!err && fsync(fd) < 0)
		err = errno;
	if (close(fd) < 0 && !err)
		err = errno;
	if (!err && (force ? rename(tmp, path) : link(tmp, path)) < 0)
		err = errno;
	unlink(tmp); /* after rename() it is gone already */
out:
	free(tmp);
	return err;
}

static int run_init(cli_ctx *ctx, void *o, const cli_args *args)
{
	(void)ctx;
	(void)args;
	const struct init_opts *opts = o;
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd))) {
		cli_error("init: cannot read the working directory: %s", strerror(errno));
		return BG_EXIT_FAIL;
	}
	char *root = repo_root(cwd);
	const char *dir = root ? root : cwd;
	const char *home = getenv("HOME");
	char *ssh_config = xasprintf("%s/.ssh/config", home ? home : "");
	size_t n_hosts = 0;
	char **hosts = home ? sshcfg_host_names(ssh_config, home, &n_hosts) : NULL;
	char *text = conf_starter_text(dir, hosts, n_hosts);
	int code = BG_EXIT_OK;
	if (opts->to_stdout) {
		cli_write(stdout, text, strlen(text));
	} else {
		char *path = xasprintf("%s/boxgate.ini", strcmp(dir, "/") == 0 ? "" : dir);
		int err = write_whole(path, text, opts->force);
		if (err == EEXIST) {
			cli_error("init: %s exists; left as it is (--force replaces it)", path);
			code = BG_EXIT_FAIL;
		} else if (err) {
			cli_error("init: cannot write %s: %s", path, strerror(err));
			code = BG_EXIT_FAIL;
		} else {
			cli_printf(stdout,
				   "boxgate: wrote %s%s (%zu host%s from %s offered as boxes, "
				   "commented out)\n",
				   path, root ? "" : " (not inside a git repository)", n_hosts,
				   n_hosts == 1 ? "" : "s", ssh_config);
		}
		free(path);
	}
	for (size_t i = 0; i < n_hosts; i++)
		free(hosts[i]);
	free(hosts);
	free(text);
	free(ssh_config);
	free(root);
	return code;
}

/* clang-format off */
const cli_cmd cli_cmd_init = {
	.name = "init", .summary = "write a commented starter boxgate.ini for this repository",
	.help = init_help, .options = init_options, .opts_size = sizeof(struct init_opts),
	.arity = CLI_ARGS_NONE, .run = run_init,
};
/* clang-format on */
