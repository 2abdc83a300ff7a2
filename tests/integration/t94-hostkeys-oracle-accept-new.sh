#!/usr/bin/env bash
# Host-key checking against the real OpenSSH client as the oracle, StrictHostKeyChecking
# accept-new (t12: yes): for every known_hosts case ssh and boxgate must both connect or
# both refuse, for the same reason, and leave the same bytes (hostkeys_oracle.sh).
source "$(dirname "$0")/lib.sh"
MODES=(accept-new)
source "$(dirname "$0")/hostkeys_oracle.sh"
finish
