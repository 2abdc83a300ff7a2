/* The views of a box that remote/ and shim/ are handed: each points at the
 * box's own strings, so neither module needs the whole conf_box. */
#include "conf/conf.h"

void conf_box_bind(conf_box *b, const char *agent_socket)
{
	b->target = (remote_target){
		.name = b->name,
		.transport = b->transport == CONF_TRANSPORT_LOCAL ? REMOTE_TRANSPORT_LOCAL
								  : REMOTE_TRANSPORT_SSH,
		.hostname = b->hostname,
		.port = b->port,
		.user = b->user,
		.identities = b->identities,
		.n_identities = b->n_identities,
		.known_hosts = b->known_hosts,
		.n_known_hosts = b->n_known_hosts,
		.global_known_hosts = b->global_known_hosts,
		.n_global_known_hosts = b->n_global_known_hosts,
		.host_key_check = b->host_key_check == CONF_HKC_ACCEPT_NEW ? REMOTE_HKC_ACCEPT_NEW
									   : REMOTE_HKC_STRICT,
		.connect_timeout_s = b->connect_timeout_s,
		.keepalive_s = b->keepalive_s,
		.control_persist_ms = b->control_persist_ms,
		.agent_socket = agent_socket,
		.unsupported = b->unsupported,
	};
	/* Each hop is reached through the one before it; the box through the last. */
	for (size_t i = 0; i < b->n_hops; i++) {
		conf_box_bind(b->hops[i], agent_socket);
		b->hops[i]->target.jump = i ? &b->hops[i - 1]->target : NULL;
	}
	b->target.jump = b->n_hops ? &b->hops[b->n_hops - 1]->target : NULL;
	b->slurm_view = (remote_slurm){
		.conf = b->slurm_conf,
		.partition = b->partition,
		.gres = b->gres,
		.srun_args = b->srun_args,
		.n_srun_args = b->n_srun_args,
		.max_jobs = b->max_jobs,
	};
	b->target.slurm = b->slurm ? &b->slurm_view : NULL;
	b->rules = (shim_rules){
		.name = b->name,
		.gate = b->gate,
		.file = b->file,
		.line = b->line,
		.builtin = b->builtin,
		.allow = b->allow,
		.n_allow = b->n_allow,
		.allow_line = b->allow_line,
		.env = b->env,
		.n_env = b->n_env,
		.num_workers_env = b->num_workers_env,
	};
}
