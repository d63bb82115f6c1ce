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
#   trickle SECONDS              queue 0 with buffers, recycled, while a
#                                request trickles in a byte every 0.95 s;
#                                prints "replies N" at the end.
#   shrink sealable|plain SECS   queue 0 with buffers, then ftruncate()s the
#                                memory file to 0 (a sealable memfd or one
#                                that cannot be sealed); "shrunk" or
#                                "shrink refused".
#   flood QUEUE LEN SECONDS      32,768 chains of 32,768 descriptors of LEN
#                                bytes on queue 0 (receive, mergeable
#                                buffers) or 1 (transmit).
#
# Prints "ready" once the attack is under way, "closed" when the backend
# hung up, "open" when it did not.
import os, socket, struct, sys, time

UVA = 0x7f0000000000

def msg(req, payload=b''):
    return struct.pack('<III', req, 1, len(payload)) + payload

def u64(v):
    return struct.pack('<Q', v)

def state(i, n):
    return struct.pack('<II', i, n)

class Frontend:
    # Queue q's rings at q * span: descriptors, then avail at +16n, used at
    # +32n; queue 0's buffers (2048 bytes each, at most 256) after both.
    def __init__(self, path, n=8, sealable=False):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.s.settimeout(20)
        self.n = n
        self.span = (48 * n + 4095) & ~4095
        self.nbuf = min(n, 256)
        self.buf = 2 * self.span
        self.size = self.buf + self.nbuf * 2048
        self.mem = os.memfd_create('guest', os.MFD_ALLOW_SEALING
                                   if sealable else 0)
        os.ftruncate(self.mem, self.size)
        self.keep = []

    def desc(self, q): return q * self.span
    def avail(self, q): return q * self.span + 16 * self.n
    def used(self, q): return q * self.span + 32 * self.n

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
                  struct.pack('<QQQQ', 0, self.size, UVA, 0), [self.mem])
        for q in (0, 1):
            self.send(8, state(q, self.n))
            self.send(10, state(q, 0))
            self.send(9, struct.pack('<IIQQQQ', q, 0, UVA + self.desc(q),
                                     UVA + self.used(q), UVA + self.avail(q),
                                     0))
        # Queue 0: writable buffers, all offered.
        for i in range(self.nbuf):
            os.pwrite(self.mem, struct.pack('<QIHH', self.buf + i * 2048,
                                            2048, 2, 0), self.desc(0) + 16 * i)
            os.pwrite(self.mem, struct.pack('<H', i), self.avail(0) + 4 + 2 * i)
        os.pwrite(self.mem, struct.pack('<HH', 0, self.nbuf), self.avail(0))
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
        n, nb = self.n, self.nbuf
        used = struct.unpack('<H', os.pread(self.mem, 2, self.used(0) + 2))[0]
        avail = struct.unpack('<H', os.pread(self.mem, 2, self.avail(0) + 2))[0]
        while avail != (used + nb) & 0xffff:
            e = self.used(0) + 4 + 8 * (avail % n)
            head = struct.unpack('<I', os.pread(self.mem, 4, e))[0]
            os.pwrite(self.mem, struct.pack('<H', head % nb),
                      self.avail(0) + 4 + 2 * (avail % n))
            avail = (avail + 1) & 0xffff
        os.pwrite(self.mem, struct.pack('<H', avail), self.avail(0) + 2)

    def flood(self, q, length):
        # Every avail entry of queue q names head 0, and the chain from
        # head 0 runs through the whole table: n chains of n descriptors.
        n, flags = self.n, (2 if q == 0 else 0)
        d = b''.join(struct.pack('<QIHH', self.buf, length,
                                 flags | (1 if i < n - 1 else 0), i + 1)
                     for i in range(n))
        os.pwrite(self.mem, d, self.desc(q))
        os.pwrite(self.mem, bytes(2 * n), self.avail(q) + 4)
        os.pwrite(self.mem, struct.pack('<HH', 0, n & 0xffff), self.avail(q))
        if q == 1:
            os.eventfd_write(self.keep[1], 1)

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
    elif what == 'trickle':
        # Queue 0 with 256 buffers, recycled, while a GET_FEATURES request
        # goes out one byte every 0.95 s; counts the replies.
        f = Frontend(path, n=256)
        f.setup()
        print('ready', flush=True)
        req, sent, replies = msg(1), 0, 0
        end = time.time() + float(args[0])
        nextb = time.time()
        f.s.setblocking(False)
        while time.time() < end:
            f.recycle()
            if time.time() >= nextb:
                try:
                    f.s.send(req[sent:sent + 1])
                except OSError:
                    print('closed', flush=True)
                    return
                sent = (sent + 1) % len(req)
                nextb += 0.95
            try:
                r = f.s.recv(4096)
                if not r:
                    print('closed', flush=True)
                    return
                replies += len(r) // 20
            except BlockingIOError:
                pass
            time.sleep(0.005)
        f.s.setblocking(True)
        f.s.sendall(req[sent:] if sent else b'')  # end on a boundary
        print('replies %d' % replies, flush=True)
        print('open', flush=True)
    elif what == 'shrink':
        # Queue 0 with buffers, recycled; then the memory file is cut to
        # nothing under the backend's mapping.
        f = Frontend(path, n=256, sealable=args[0] == 'sealable')
        f.setup()
        end = time.time() + 1
        while time.time() < end:
            f.recycle()
            time.sleep(0.005)
        try:
            os.ftruncate(f.mem, 0)
            print('shrunk', flush=True)
        except PermissionError:
            print('shrink refused', flush=True)
            end = time.time() + 1
            while time.time() < end:
                f.recycle()
                time.sleep(0.005)
        print('ready', flush=True)
        print('closed' if f.closed(float(args[1])) else 'open', flush=True)
    elif what == 'flood':
        # QUEUE (0: mergeable receive buffers, 1: transmit) offers 32,768
        # chains of 32,768 descriptors of LEN bytes.
        f = Frontend(path, n=32768)
        f.setup()
        f.flood(int(args[0]), int(args[1]))
        print('ready', flush=True)
        print('closed' if f.closed(float(args[2])) else 'open', flush=True)
    else:
        raise SystemExit('unknown attack ' + what)

main()
