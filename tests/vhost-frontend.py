#!/usr/bin/python3
# vhost-frontend.py: a hostile vhost-user frontend for tests/vhost.bats.
# It speaks just enough of the protocol (vhost-user spec, "Message types")
# to set up both queues of a virtio-net device in a memfd, then attacks:
#
#   fd-type REQUEST QUEUE KIND   SET_VRING_KICK/CALL/ERR (12/13/14) with a
#                                descriptor that is not an eventfd (memfd,
#                                pipe, socket); prints "closed" when the
#                                backend hangs up.
#   call-full SECONDS            queue 0 (backend to us) with buffers and a
#                                call eventfd whose counter is full: the
#                                backend's next call cannot be written.
#                                Recycles the buffers for SECONDS.
#   kick-replace COUNT SECONDS   replaces queue 1's kick eventfd COUNT times,
#                                keeping a copy of each and signalling it,
#                                then stays connected, idle, for SECONDS.
#
# Prints "ready" once the attack is under way, "closed" when the backend
# hung up, "open" when it did not.
import os, socket, struct, sys, time

UVA = 0x7f0000000000
MEM = 1 << 20
N = 8                       # queue size
Q_BASE = (0x0, 0x400)       # desc at base, avail +0x100, used +0x200
BUF = 0x10000               # queue 0's buffers, 2048 bytes each

def msg(req, payload=b''):
    return struct.pack('<III', req, 1, len(payload)) + payload

def u64(v):
    return struct.pack('<Q', v)

def state(i, n):
    return struct.pack('<II', i, n)

class Frontend:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.s.settimeout(20)
        self.mem = os.memfd_create('guest')
        os.ftruncate(self.mem, MEM)
        self.keep = []

    def send(self, req, payload=b'', fds=None):
        if fds:
            socket.send_fds(self.s, [msg(req, payload)], fds)
        else:
            self.s.sendall(msg(req, payload))

    def setup(self, call0=None):
        # VERSION_1 and MRG_RXBUF; no protocol features: a queue is
        # enabled when its kick arrives.
        self.send(2, u64((1 << 32) | (1 << 15)))
        self.send(3)
        self.send(5, struct.pack('<II', 1, 0) +
                  struct.pack('<QQQQ', 0, MEM, UVA, 0), [self.mem])
        for q in (0, 1):
            b = Q_BASE[q]
            self.send(8, state(q, N))
            self.send(10, state(q, 0))
            self.send(9, struct.pack('<IIQQQQ', q, 0, UVA + b,
                                     UVA + b + 0x200, UVA + b + 0x100, 0))
        # Queue 0: N writable buffers, all offered.
        for i in range(N):
            os.pwrite(self.mem, struct.pack('<QIHH', BUF + i * 2048, 2048,
                                            2, 0), Q_BASE[0] + 16 * i)
            os.pwrite(self.mem, struct.pack('<H', i), Q_BASE[0] + 0x104 + 2 * i)
        os.pwrite(self.mem, struct.pack('<HH', 0, N), Q_BASE[0] + 0x100)
        if call0 is not None:
            self.send(13, u64(0), [call0])
        for q in (0, 1):
            k = os.eventfd(0)
            self.keep.append(k)
            self.send(12, u64(q), [k])

    def closed(self, timeout):
        self.s.settimeout(timeout)
        try:
            while self.s.recv(4096):
                pass
            return True
        except (socket.timeout, TimeoutError):
            return False
        except OSError:
            return True

    def recycle(self):
        # Offer again every buffer the backend has returned.
        used = struct.unpack('<H', os.pread(self.mem, 2, Q_BASE[0] + 0x202))[0]
        avail = struct.unpack('<H', os.pread(self.mem, 2, Q_BASE[0] + 0x102))[0]
        while avail != (used + N) & 0xffff:
            e = Q_BASE[0] + 0x204 + 8 * (avail % N)
            head = struct.unpack('<I', os.pread(self.mem, 4, e))[0]
            os.pwrite(self.mem, struct.pack('<H', head % N),
                      Q_BASE[0] + 0x104 + 2 * (avail % N))
            avail = (avail + 1) & 0xffff
        os.pwrite(self.mem, struct.pack('<H', avail), Q_BASE[0] + 0x102)

def not_an_eventfd(kind):
    if kind == 'memfd':
        return os.memfd_create('not-an-eventfd')
    if kind == 'pipe':
        r, w = os.pipe()
        return w
    if kind == 'socket':
        a, b = socket.socketpair()
        return a.detach()
    raise SystemExit('unknown kind ' + kind)

def main():
    path, what, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    f = Frontend(path)
    if what == 'fd-type':
        req, q, kind = int(args[0]), int(args[1]), args[2]
        f.setup()
        f.send(req, u64(q), [not_an_eventfd(kind)])
        print('ready', flush=True)
        print('closed' if f.closed(20) else 'open', flush=True)
    elif what == 'call-full':
        call = os.eventfd(0)
        os.eventfd_write(call, 0xfffffffffffffffe)  # the counter's maximum
        f.setup(call0=call)
        print('ready', flush=True)
        end = time.time() + float(args[0])
        while time.time() < end:
            f.recycle()
            time.sleep(0.01)
        print('open', flush=True)
    elif what == 'kick-replace':
        f.setup()
        for i in range(int(args[0])):
            k = os.eventfd(0)
            f.keep.append(k)
            f.send(12, u64(1), [k])
        time.sleep(0.2)
        for k in f.keep:
            os.eventfd_write(k, 1)
        print('ready', flush=True)
        print('closed' if f.closed(float(args[1])) else 'open', flush=True)
    else:
        raise SystemExit('unknown attack ' + what)

main()
