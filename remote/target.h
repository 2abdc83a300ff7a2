/* Where and how to reach one box: everything remote/ reads to connect, and
 * nothing about gates or shims. Plain data with no dependency; every pointer
 * is borrowed from whoever fills it (conf/ fills one per box, pointing at the
 * box's own strings) and must outlive the connection. */
#ifndef BG_REMOTE_TARGET_H
#define BG_REMOTE_TARGET_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { REMOTE_TRANSPORT_SSH, REMOTE_TRANSPORT_LOCAL } remote_transport;
typedef enum { REMOTE_HKC_STRICT, REMOTE_HKC_ACCEPT_NEW } remote_hostkey_policy;

/* A Slurm login node (remote/slurm.h): how boxgate uses it; borrowed strings. */
typedef struct remote_slurm {
	const char *conf;       /* exported as SLURM_CONF before every command; NULL: none */
	const char *partition;  /* srun --partition; NULL: Slurm's default */
	const char *gres;       /* srun --gres per step */
	char *const *srun_args; /* more srun words, each quoted */
	size_t n_srun_args;
	int max_jobs; /* steps at once */
} remote_slurm;

typedef struct remote_target {
	const char *name; /* the box, for messages */
	remote_transport transport;
	const char *hostname; /* where to connect (HostName, resolved) */
	int port;
	const char *user;        /* NULL: "root" */
	char *const *identities; /* identity files, expanded */
	size_t n_identities;
	/* User known_hosts files: all are read; a new key is recorded in the first. */
	char *const *known_hosts;
	size_t n_known_hosts;
	char *const *global_known_hosts; /* read, never written */
	size_t n_global_known_hosts;
	remote_hostkey_policy host_key_check;
	int connect_timeout_s;
	int keepalive_s; /* 0: none */
	/* How long a connection master (remote/master.h) outlives its last
	 * command, idle; 0: none is left behind. */
	long long control_persist_ms;
	const char *agent_socket; /* ssh-agent's socket ($SSH_AUTH_SOCK); NULL: no agent */
	/* Set when the box asks for something boxgate cannot do ("ProxyCommand
	 * (~/.ssh/config:12)"): remote_connect refuses it. */
	const char *unsupported;
	/* ProxyJump: the hop this box is reached through (itself a target, with
	 * its own jump for a chain); NULL: a direct TCP connection. */
	const struct remote_target *jump;
	/* A Slurm login node: gate runs are srun steps on its compute nodes
	 * (remote/slurm.h); NULL: the box runs them itself. */
	const remote_slurm *slurm;
} remote_target;

#endif
