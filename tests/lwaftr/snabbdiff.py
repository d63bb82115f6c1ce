"""
tests/lwaftr/snabbdiff.py: run the same input through Snabb's lwAFTR (the
reference, `snabb lwaftr check`) and snb-lwaftr, and say how they differ.

Used by tests/lwaftr/snabb-diff (one configuration and input pair, or every
case of a cases.tsv) and tests/lwaftr/snabb-corpus (a generated corpus).
Outputs are compared per side, record by record, byte for byte; counters
by name (the reference's memuse-* counters say how much memory it
reserved, not what it did, and are left out).
"""
import os
import re
import shutil
import struct
import subprocess
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
EMPTY = struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1)


def find_snabb(given=None):
    """The reference binary: given, $SNABB, or the anchor's build."""
    for p in (given, os.environ.get("SNABB"),
              "/tmp/snb-snabb-ref/src/snabb"):
        if p and os.access(p, os.X_OK):
            return p
    return None


def find_bindir(given=None):
    if given:
        return given
    for d in os.environ.get("PATH", "").split(":"):
        if d and os.access(os.path.join(d, "snb-lwaftr"), os.X_OK):
            return d
    return os.path.join(REPO, "build", "bin")


def read_pcap(path):
    """The packet records of a pcap file, as bytes, in order."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return []
    endian = "<" if data[:4] == b"\xd4\xc3\xb2\xa1" else ">"
    recs, off = [], 24
    while off + 16 <= len(data):
        incl = struct.unpack(endian + "I", data[off + 8:off + 12])[0]
        recs.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return recs


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(EMPTY)
        for b in frames:
            b = bytes(b)
            f.write(struct.pack("<IIII", 0, 0, len(b), len(b)))
            f.write(b)


def snabb_counters(path):
    """A counters file `snabb lwaftr check -r` writes (Lua): name -> value."""
    out = {}
    with open(path) as f:
        for m in re.finditer(r'\["([^"]+)"\]\s*=\s*(-?\d+)', f.read()):
            if not m.group(1).startswith("memuse-"):
                out[m.group(1)] = int(m.group(2))
    return out


def snb_counters(path):
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                k, v = line.split()
                out[k] = int(v)
    return out


class Result:
    def __init__(self, out4, out6, counters, error=None):
        self.out4, self.out6, self.counters = out4, out6, counters
        self.error = error


def run_snabb(snabb, conf, in4, in6, work):
    """Snabb's lwaftr check: it writes its compiled configuration next to
    CONF, so it reads a copy in WORK."""
    os.makedirs(work, exist_ok=True)
    c = os.path.join(work, "snabb.conf")
    shutil.copyfile(conf, c)
    o4, o6 = os.path.join(work, "snabb4.pcap"), os.path.join(work, "snabb6.pcap")
    cnt = os.path.join(work, "snabb.counters")
    for p in (o4, o6, cnt):
        if os.path.exists(p):
            os.unlink(p)
    # -D: how long it runs; its default 0.1 s is too short on a loaded
    # machine (a packet now and then not yet out when it stops), and a
    # batch of hundreds of frames needs longer still (the reference then
    # disagrees with itself: diff() says "reference unstable").
    # SNB_SNABB_SLOW multiplies it where even that is short (a reference
    # that counts fewer in-ipvX packets than frames were given).
    n = len(read_pcap(in4)) + len(read_pcap(in6))
    slow = float(os.environ.get("SNB_SNABB_SLOW", "1"))
    p = subprocess.run([snabb, "lwaftr", "check", "-r", "-D",
                        "%.2f" % ((0.4 + n * 0.01) * slow), c, in4, in6, o4, o6, cnt], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=120)
    if p.returncode != 0 or not os.path.exists(cnt):
        return Result([], [], {}, "snabb failed: " +
                      p.stdout.decode(errors="replace")[-400:])
    return Result(read_pcap(o4), read_pcap(o6), snabb_counters(cnt))


def run_snb(bindir, conf, in4, in6, work, wait=True):
    """snb-lwaftr as tests/lwaftr-conformance.sh runs it.  wait=False:
    start it and return a function that waits and gives the Result."""
    os.makedirs(work, exist_ok=True)
    o4, o6 = os.path.join(work, "snb4.pcap"), os.path.join(work, "snb6.pcap")
    cnt = os.path.join(work, "snb.counters")
    for p in (o4, o6, cnt):
        if os.path.exists(p):
            os.unlink(p)
    env = dict(os.environ)
    env.setdefault("SNB_RUN_DIR", "/dev/shm/snb-diff-%d" % os.getpid())
    graph = ("pcap-read '%s' | [v4] lw: lwaftr --deterministic "
             "--counters-out '%s' '%s' [v4] | "
             "pcap-write --timestamps zero '%s'\n"
             "pcap-read '%s' | [v6] @lw [v6] | "
             "pcap-write --timestamps zero '%s'" %
             (in4, cnt, conf, o4, in6, o6))
    p = subprocess.Popen([os.path.join(bindir, "snb-run"), "-n", "snbdiff-%d-%s"
                          % (os.getpid(), os.path.basename(work)), graph],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         env=env)

    def finish():
        try:
            out = p.communicate(timeout=120)[0]
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            return Result([], [], {}, "snb-run timed out")
        if p.returncode != 0:
            return Result([], [], {}, "snb-run failed: " +
                          out.decode(errors="replace")[-400:])
        return Result(read_pcap(o4), read_pcap(o6), snb_counters(cnt))
    return finish() if wait else finish


def compare(ref, snb):
    """The differences between two Results, as lines ([] if none)."""
    if ref.error or snb.error:
        return [e for e in (ref.error, snb.error) if e]
    lines = []
    for side, a, b in (("v4", ref.out4, snb.out4), ("v6", ref.out6, snb.out6)):
        if a == b:
            continue
        lines.append("%s: reference %d records, snb %d" % (side, len(a), len(b)))
        for i in range(max(len(a), len(b))):
            x = a[i] if i < len(a) else None
            y = b[i] if i < len(b) else None
            if x == y:
                continue
            lines.append("  #%d reference: %s" % (i + 1, describe(x)))
            lines.append("  #%d snb:       %s" % (i + 1, describe(y)))
            if x is not None and y is not None and len(x) == len(y):
                at = [j for j in range(len(x)) if x[j] != y[j]]
                lines.append("      bytes differ at offsets %s" %
                             ",".join(str(j) for j in at[:12]))
    names = sorted(set(ref.counters) | set(snb.counters))
    for k in names:
        x, y = ref.counters.get(k, 0), snb.counters.get(k, 0)
        if x != y:
            lines.append("counter %s: reference %d, snb %d" % (k, x, y))
    return lines


def describe(frame):
    if frame is None:
        return "(none)"
    try:
        from scapy.layers.l2 import Ether
        return "%d bytes %s" % (len(frame), Ether(frame).summary())
    except Exception:       # scapy is optional for a plain diff
        return "%d bytes %s" % (len(frame), frame[:40].hex())


def diff(snabb, bindir, conf, in4, in6, work=None, confirm=True):
    """Run both on CONF with IN4/IN6 (pcap paths); the differences."""
    own = work is None
    if own:
        work = tempfile.mkdtemp(prefix="snb-snabbdiff.")
    try:
        ref = run_snabb(snabb, conf, in4, in6, work)
        got = run_snb(bindir, conf, in4, in6, work)
        d = compare(ref, got)
        if d and confirm and not ref.error:
            # Ask the reference again: a difference it does not repeat
            # is its timing, not a behaviour.
            again = run_snabb(snabb, conf, in4, in6, work)
            if compare(ref, again):
                return ["reference unstable: " + ln
                        for ln in compare(ref, again)]
        return d
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)


def diff_frames(snabb, bindir, conf, frames4, frames6, work, confirm=True):
    """As diff, with the inputs given as lists of frames."""
    os.makedirs(work, exist_ok=True)
    i4, i6 = os.path.join(work, "in4.pcap"), os.path.join(work, "in6.pcap")
    write_pcap(i4, frames4)
    write_pcap(i6, frames6)
    return diff(snabb, bindir, conf, i4, i6, work, confirm)


def bisect(snabb, bindir, conf, frames4, frames6, work):
    """Inputs whose outputs differ when run alone: [(side, index, lines)].
    Halves each side's list while the halves differ, so a batch of N
    frames with one culprit costs about 2 log2 N runs, not N."""
    found = []

    def walk(side, lo, hi):
        f4 = frames4[lo:hi] if side == 4 else []
        f6 = frames6[lo:hi] if side == 6 else []
        d = diff_frames(snabb, bindir, conf, f4, f6, work)
        if not d:
            return
        if hi - lo == 1:
            found.append((side, lo, d))
            return
        mid = (lo + hi) // 2
        n = len(found)
        walk(side, lo, mid)
        walk(side, mid, hi)
        if len(found) == n:     # only together: a sequence effect
            found.append((side, (lo, hi), d))

    if frames4:
        walk(4, 0, len(frames4))
    if frames6:
        walk(6, 0, len(frames6))
    return found


def per_frame_snb(bindir, conf, frames, side, work, jobs=2):
    """snb's Result for each frame of one input side run alone (jobs at
    a time: snb is cheap to start, the reference is not)."""
    out, running = [None] * len(frames), []
    for i, f in enumerate(frames):
        w = os.path.join(work, "f%d" % i)
        os.makedirs(w, exist_ok=True)
        i4, i6 = os.path.join(w, "in4.pcap"), os.path.join(w, "in6.pcap")
        write_pcap(i4, [f] if side == 4 else [])
        write_pcap(i6, [f] if side == 6 else [])
        running.append((i, run_snb(bindir, conf, i4, i6, w, wait=False)))
        if len(running) >= jobs:
            j, fin = running.pop(0)
            out[j] = fin()
    for j, fin in running:
        out[j] = fin()
    return out


def align(ref, alone):
    """Which frames' outputs, run alone through snb, are not where the
    reference's output of the whole batch has them: ref is a list of
    records, alone a list (one per frame) of lists.  After a mismatch it
    resynchronises on the next frames, skipping up to 4 reference
    records.  Returns [(frame, reference records taken for it)]."""
    bad, p = [], 0
    for i, mine in enumerate(alone):
        if ref[p:p + len(mine)] == mine:
            p += len(mine)
            continue
        rest = [r for m in alone[i + 1:i + 4] for r in m]
        for k in range(0, 5):
            if ref[p + k:p + k + len(rest)] == rest:
                break
        else:
            k = len(mine)
        bad.append((i, ref[p:p + k]))
        p += k
    if p < len(ref):
        bad.append((len(alone), ref[p:]))
    return bad
