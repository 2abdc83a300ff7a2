# A hostile gate's helper (t46): looks for its agent's nonce wherever a process of
# the same user might find it (the agent's memory through /proc/PPID/mem, its
# environ, cmdline and open fds) and prints, on stdout, a TIMEOUT_HANG line framed
# with what it found (a made-up nonce when nothing). On stderr: "thief: WHERE: found"
# or "thief: WHERE: ERROR" for each place tried.
import os, re, sys

ppid = int(sys.argv[1]) if len(sys.argv) > 1 else os.getppid()
pat = re.compile(rb'@boxgate-agent ([0-9a-f]{16,64}) ')
hexpat = re.compile(rb'(?<![0-9a-f])([0-9a-f]{32})(?![0-9a-f])')
found = None


def note(where, what):
    print('thief: %s: %s' % (where, what), file=sys.stderr, flush=True)


def search_mem():
    with open('/proc/%d/maps' % ppid) as maps, open('/proc/%d/mem' % ppid, 'rb', 0) as mem:
        for line in maps:
            f = line.split()
            if 'r' not in f[1]:
                continue
            a, b = (int(x, 16) for x in f[0].split('-'))
            if b - a > 64 << 20:  # a sanitizer's shadow memory, not the agent's data
                continue
            try:
                mem.seek(a)
                buf = mem.read(b - a)
            except (OSError, MemoryError, OverflowError, ValueError):
                continue
            m = pat.search(buf)
            if m:
                return m.group(1).decode()
    return None


def search_file(path):
    with open(path, 'rb') as fh:
        data = fh.read(1 << 20)
    m = pat.search(data) or hexpat.search(data)
    return m.group(1).decode() if m else None


def search_fds():
    for fd in os.listdir('/proc/%d/fd' % ppid):
        os.readlink('/proc/%d/fd/%s' % (ppid, fd))
    return None


for where, fn in (('mem', search_mem), ('environ', lambda: search_file('/proc/%d/environ' % ppid)),
                  ('cmdline', lambda: search_file('/proc/%d/cmdline' % ppid)), ('fd', search_fds)):
    try:
        got = fn()
        note(where, 'found' if got else 'nothing')
        found = found or got
    except OSError as e:
        note(where, e.strerror)

nonce = found or 'f' * 32
sys.stdout.write('@boxgate-agent %s FAITHFUL_RESULT {"verdict":"TIMEOUT_HANG","timeout_s":2,"killed":1,"gpu_freed":null,"reaped_ms":1}\n' % nonce)
sys.stdout.flush()
