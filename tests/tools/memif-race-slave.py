#!/usr/bin/python3
# memif-race-slave.py SOCKET SECONDS: a hostile memif slave that races the
# master's region check (issue 17, item 8).
#
# Over and over, for SECONDS: connect, INIT, then ADD_REGION with a memfd
# that a second thread keeps resizing between its full size and 0 bytes
# until the master's F_SEAL_SHRINK shows up on it (the thread then stops,
# leaving the file at whatever size it had).  A master that checks the size
# before sealing can end up with a sealed 0-byte file it believes is big
# enough; the cookie read on CONNECT then dies of SIGBUS.  A master that
# seals first and then checks either refuses the region or holds a file
# that can no longer shrink.
#
# Prints one summary line: attempts, regions refused, connections that
# reached CONNECTED, other DISCONNECTs, and "closed" (the master vanished
# without a DISCONNECT: what a crash looks like from here).
import fcntl, os, socket, struct, sys, threading, time

COOKIE, VERSION = 0x3E31F20, 0x0200
SLOTS, LOG2 = 16, 4
RING_BYTES = 128 + 16 * SLOTS
SIZE = 2 * RING_BYTES + 2 * SLOTS * 2048


def msg(t, payload=b''):
    b = struct.pack('<H', t) + payload
    return b + b'\0' * (128 - len(b))


def init():
    return msg(3, struct.pack('<HIB', VERSION, 0, 0) + b'\0' * 24 +
               b'race'.ljust(32, b'\0'))


def region(i, size):
    return msg(4, struct.pack('<HQ', i, size))


def ring(s2m, i, reg, off, l2):
    return msg(5, struct.pack('<HHHIBH', s2m, i, reg, off, l2, 0))


def sealed(fd):
    return fcntl.fcntl(fd, fcntl.F_GET_SEALS) & fcntl.F_SEAL_SHRINK


def cookies(fd):
    for off in (0, RING_BYTES):
        os.pwrite(fd, struct.pack('<I', COOKIE), off)


def flip(fd, stop):
    # Shrink to nothing and grow back until the master seals the file.
    while not stop.is_set():
        if sealed(fd):
            return
        try:
            os.ftruncate(fd, 0)
        except PermissionError:
            return
        if sealed(fd):
            return
        try:
            os.ftruncate(fd, SIZE)
            cookies(fd)
        except PermissionError:
            return


def recv_type(s):
    m = s.recv(256)
    if not m:
        return None, ''
    t = struct.unpack_from('<H', m)[0]
    why = m[6:102].split(b'\0')[0].decode() if t == 8 else ''
    return t, why


def attempt(path, tally):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    try:
        s.connect(path)
    except OSError:
        tally['unreachable'] += 1
        time.sleep(0.01)
        return
    fd = os.memfd_create('race', os.MFD_ALLOW_SEALING)
    efds = [os.eventfd(0), os.eventfd(0)]
    stop = threading.Event()
    th = None
    try:
        if s.recv(256) == b'':		# HELLO
            tally['closed'] += 1
            return
        s.send(init())
        if recv_type(s)[0] != 1:
            tally['other'] += 1
            return
        os.ftruncate(fd, SIZE)
        cookies(fd)
        th = threading.Thread(target=flip, args=(fd, stop))
        th.start()
        socket.send_fds(s, [region(0, SIZE)], [fd])
        t, why = recv_type(s)
        stop.set()
        th.join()
        if t is None:
            tally['closed'] += 1
            return
        if t == 8:
            tally['refused' if 'region 0' in why else 'other'] += 1
            return
        socket.send_fds(s, [ring(1, 0, 0, 0, LOG2)], [efds[0]])
        t, why = recv_type(s)
        if t == 1:
            socket.send_fds(s, [ring(0, 0, 0, RING_BYTES, LOG2)],
                            [efds[1]])
            t, why = recv_type(s)
        if t == 1:
            s.send(msg(6, b'race'.ljust(32, b'\0')))
            t, why = recv_type(s)
        if t is None:
            tally['closed'] += 1
        elif t == 7:
            tally['connected'] += 1
        else:
            tally['other'] += 1
    except (socket.timeout, ConnectionError):
        tally['closed'] += 1
    finally:
        stop.set()
        if th is not None:
            th.join()
        s.close()
        os.close(fd)
        for e in efds:
            os.close(e)


def main():
    path, seconds = sys.argv[1], float(sys.argv[2])
    tally = dict(attempts=0, refused=0, connected=0, other=0, closed=0,
                 unreachable=0)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        tally['attempts'] += 1
        attempt(path, tally)
    print(' '.join('%s=%d' % kv for kv in tally.items()))


main()
