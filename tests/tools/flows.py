#!/usr/bin/python3
# flows.py: many UDP flows with a sequence number in every payload, for the
# tests of a device's queues (tests/nic-queues.bats, tests/vm.bats).
#
#   flows.py send IF COUNT FLOWS [FIRST]
#					send frames FIRST (0) to COUNT - 1 on
#					IF (AF_PACKET), frame i of flow
#					i*7919 % FLOWS
#   flows.py check COUNT FILE...	FILE is "tshark -T fields -e ip.src
#					-e udp.srcport -e udp.payload" of what
#					one queue received; check that the
#					queues got every frame exactly once,
#					each flow on one queue, and print
#					per-file counts
#
# A flow is (source address, source port); the payload says which flow
# and which frame it is ("SNBQ", seq, flow), so a frame that arrives with
# headers not its own is caught too.
import socket, struct, sys

def flow_addr(f):
    return bytes([10, 98, f >> 8 & 255, f & 255]), 1024 + f

def frame(seq, f):
    src, sport = flow_addr(f)
    dst = bytes([10, 99, 0, 2])
    data = b'SNBQ' + struct.pack('!II', seq, f) + bytes(18 + seq % 64)
    udp = struct.pack('!HHHH', sport, 5000, 8 + len(data), 0) + data
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), seq & 0xffff,
                     0, 64, 17, 0, src, dst)
    s = sum(struct.unpack('!10H', ip))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    ip = ip[:10] + struct.pack('!H', ~s & 0xffff) + ip[12:]
    return bytes.fromhex('020000000002' '020000000001' '0800') + ip + udp

def send(ifc, count, flows, first):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifc, 0))
    for seq in range(first, count):
        f = seq * 7919 % flows
        while True:
            try:
                s.send(frame(seq, f))
                break
            except BlockingIOError:
                pass
            except OSError as e:	# ENOBUFS: the queue is full
                if e.errno != 105:
                    raise

def check(count, files):
    seen, where, bad = {}, {}, 0
    for name in files:
        n = 0
        for line in open(name):
            w = line.split()
            if len(w) != 3:
                continue
            p = bytes.fromhex(w[2].replace(':', ''))
            if p[:4] != b'SNBQ':
                continue
            seq, f = struct.unpack('!II', p[4:12])
            src, sport = flow_addr(f)
            if w[0] != socket.inet_ntoa(src) or int(w[1]) != sport:
                print('%s: frame %d of flow %d has the headers of %s:%s'
                      % (name, seq, f, w[0], w[1]))
                bad += 1
            if seq in seen:
                print('frame %d twice: %s and %s' % (seq, seen[seq], name))
                bad += 1
            seen[seq] = name
            if where.setdefault(f, name) != name:
                print('flow %d on %s and %s' % (f, where[f], name))
                bad += 1
            n += 1
        print('%s %d frames %d flows' % (name, n, sum(
            1 for q in where.values() if q == name)))
    missing = [s for s in range(count) if s not in seen]
    if missing:
        print('%d frames missing, first %s' % (len(missing), missing[:10]))
        bad += 1
    return bad == 0

if sys.argv[1] == 'send':
    send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
         int(sys.argv[5]) if len(sys.argv) > 5 else 0)
elif sys.argv[1] == 'check':
    sys.exit(0 if check(int(sys.argv[2]), sys.argv[3:]) else 1)
else:
    sys.exit('usage: flows.py send IF COUNT FLOWS [FIRST] | check COUNT FILE...')
