#!/usr/bin/python3
"""A model of boxgate's campaign scheduler (cli/campaign_sched.c), fed by
per-job costs measured on the test hosts, that predicts a campaign's makespan
on more slots than this machine can host.

What it mirrors: one worker per slot (a slot's first worker reuses the
connection that asked the box's agent about its slots; a box's other slots
connect in their own threads), a second worker per slot that connects once
its partner's first gate runs and from then on has the next job staged (its
channel open, agent start and lock wait hidden behind the running gate) while
the queue holds a job for every slot; jobs taken from one queue as slots free
up. What the model charges:

  start_s   time from launch to the first gate on a slot, at the measured
            scale (config, probe, connect, agent check, first setup)
  conn_cpu  client CPU per SSH connection (key exchange, signature, auth)
  gate_s    the gate's own time on the box
  gap_s     a slot's idle time between one gate's end and the next one's
            start once staged (the lock handed over, the agent starting the
            gate), as the gates' own log shows it
  job_cpu   client CPU per job (its channel, lines, judging, record)
  cores     the client's cores

The client's CPU is one FIFO queue served by `cores` servers: every
connection and every job takes its share before it goes on. With few slots
the queue is empty and the makespan is start + rounds x (gate + gap); with
many, jobs wait for the client's CPU and the client is the bottleneck: past
slots* = cores x (gate_s + gap_s) / job_cpu the slots ask for more CPU than
the client has.

  sched_model.py predict --slots N --jobs J [--boxes B] COSTS...
  sched_model.py calibrate GATE_LOG LAUNCH_EPOCH CPU_S CONN_CPU_S
      prints the costs (as --name value pairs) measured from one campaign run
  sched_model.py measured GATE_LOG LAUNCH_EPOCH
      prints "MAKESPAN GATE_S FIRST_S": the last gate's end after launch, the median
      gate, the first gate's start after launch
"""
import argparse
import heapq
import math
import sys


def simulate(slots, jobs, start_s, conn_cpu, gate_s, gap_s, job_cpu, cores, boxes=None,
             start_scale=None):
    """Returns (makespan_s, client_cpu_busy_fraction, first_gate_s)."""
    cores = max(1, int(cores))
    boxes = boxes or slots
    free = [0.0] * cores  # when each client core is next free (a heap)
    heapq.heapify(free)
    busy = 0.0

    def cpu(at, cost):
        nonlocal busy
        t = heapq.heappop(free)
        done = max(t, at) + cost
        heapq.heappush(free, done)
        busy += cost
        return done

    # Start-up: start_s was measured at start_scale slots, where the client's
    # CPU for their connections was not yet queued; on more slots every
    # connection (one per box for the probe, one per other slot) queues.
    scale = start_scale or slots
    # start_s reaches the first gate's start: the first job's own gap is in it
    latency = max(0.0, start_s - conn_cpu * scale / cores - max(0.0, gap_s - job_cpu))
    conns = boxes + (slots - boxes)
    ready = []
    for i in range(slots):
        t = cpu(0.0, conn_cpu) if i < conns else 0.0
        ready.append(t + latency)
    # The staging partners' connections: one per slot, once its first gate runs.
    partner_cpu = [conn_cpu] * slots
    # Jobs: a slot takes the next job when it is ready; its job's client CPU is
    # queued then, the gate starts after the gap (the lock handed over).
    events = [(ready[i], i) for i in range(slots)]
    heapq.heapify(events)
    first = min(ready) if ready else 0.0
    left = jobs
    end = 0.0
    latency_gap = max(0.0, gap_s - job_cpu)
    while left > 0 and events:
        t, i = heapq.heappop(events)
        left -= 1
        if partner_cpu[i]:
            # requests are booked in time order (FIFO): the partner's
            # connection is asked for as its slot takes its first job
            cpu(t, partner_cpu[i])
            partner_cpu[i] = 0.0
        at = cpu(t, job_cpu)
        start = at + latency_gap
        done = start + gate_s
        end = max(end, done)
        heapq.heappush(events, (done, i))
    return end, busy / max(end, 1e-9) / cores, first


def client_bound_slots(gate_s, gap_s, job_cpu, cores):
    return cores * (gate_s + gap_s) / job_cpu if job_cpu > 0 else float("inf")


def gate_log(path):
    """Per slot, the (start, end) of each gate from lines "HOST start|end ... SLOT EPOCH"
    (the campaign gate's log, its host put in front)."""
    runs = {}
    for line in open(path):
        w = line.split()
        if len(w) < 4 or w[1] not in ("start", "end"):
            continue
        try:
            t = float(w[-1])
        except ValueError:
            continue
        if not math.isfinite(t):
            continue
        key = (w[0], w[-2])
        runs.setdefault(key, []).append((t, w[1]))
    out = {}
    for key, ev in runs.items():
        ev.sort()
        pairs, began = [], None
        for t, kind in ev:
            if kind == "start":
                began = t
            elif began is not None:
                pairs.append((began, t))
                began = None
        out[key] = pairs
    return out


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else 0.0


def calibrate(log, launch, cpu_s, conn_cpu):
    """Costs from one campaign: the gates' own times and the idle time of a slot between
    one gate's end and the next one's start (from the gates' log), the first gate's start
    after launch, the client's CPU per job beyond its connections (two per slot)."""
    slots = gate_log(log)
    if not any(slots.values()):
        raise SystemExit("sched_model.py: %s: no gate ran (no start/end pair)" % log)
    gates = [e - s for v in slots.values() for s, e in v]
    gaps = [b[0] - a[1] for v in slots.values() for a, b in zip(v, v[1:])]
    first = min(s for v in slots.values() for s, _ in v)
    n = len(gates)
    job_cpu = max(0.0, (cpu_s - 2 * len(slots) * conn_cpu) / max(n, 1))
    return {"start_s": first - launch, "gap_s": median(gaps), "job_cpu": job_cpu,
            "gate_s": median(gates), "last_end": max(e for v in slots.values() for _, e in v)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("predict")
    p.add_argument("--slots", type=int, required=True)
    p.add_argument("--jobs", type=int, required=True)
    p.add_argument("--boxes", type=int)
    p.add_argument("--start-scale", type=int, help="the slot count start_s was measured at")
    for k in ("start_s", "conn_cpu", "gate_s", "gap_s", "job_cpu"):
        p.add_argument("--" + k, type=float, required=True)
    p.add_argument("--cores", type=int, default=2)
    c = sub.add_parser("calibrate")
    c.add_argument("log")
    c.add_argument("launch", type=float)
    c.add_argument("cpu_s", type=float)
    c.add_argument("conn_cpu", type=float)
    m = sub.add_parser("measured")
    m.add_argument("log")
    m.add_argument("launch", type=float)
    a = ap.parse_args()
    if a.cmd in ("calibrate", "measured"):
        m = calibrate(a.log, a.launch, getattr(a, "cpu_s", 0.0), getattr(a, "conn_cpu", 0.0))
        if a.cmd == "measured":
            print("%.3f %.4f %.3f" % (m["last_end"] - a.launch, m["gate_s"], m["start_s"]))
        else:
            print(" ".join("--%s %.4f" % (k, m[k]) for k in ("start_s", "gap_s", "job_cpu")))
        return 0
    if a.slots < 1 or a.jobs < 1 or a.cores < 1 or (a.boxes is not None and not 1 <= a.boxes <= a.slots):
        ap.error("--slots, --jobs and --cores must be at least 1, --boxes from 1 to --slots")
    if min(a.start_s, a.conn_cpu, a.gate_s, a.gap_s, a.job_cpu) < 0:
        ap.error("times must not be negative")
    span, util, first = simulate(a.slots, a.jobs, a.start_s, a.conn_cpu, a.gate_s, a.gap_s,
                                 a.job_cpu, a.cores, a.boxes, a.start_scale)
    rounds = -(-a.jobs // a.slots)
    ideal = rounds * a.gate_s
    star = client_bound_slots(a.gate_s, a.gap_s, a.job_cpu, a.cores)
    print("makespan %.3f s ideal %.3f s ratio %.2f first_gate %.3f s client_cpu %.0f%% "
          "client_bound_past %.0f slots" % (span, ideal, span / ideal if ideal else 0, first,
                                            100 * util, star))
    return 0


if __name__ == "__main__":
    sys.exit(main())
