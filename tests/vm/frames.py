#!/usr/bin/env python3
"""Host side of the guest tests (tests/vm.bats): frames into a tap, and
the comparison of what came back with what libpcap selects.

  frames.py select IN.pcap OUT.pcap [MAC]
                                      keep the records a tap can carry
                                      whole: not truncated, 60..1514 bytes
                                      (shorter ones come back padded);
                                      with MAC, every third one kept is
                                      addressed to MAC
  frames.py send IFACE FILE.pcap      send every record on IFACE (AF_PACKET)
  frames.py compare WANT.pcap GOT.pcap
                                      same frames, same order, same bytes?
  frames.py count FILE.pcap           number of records
  frames.py flood IFACE SECONDS       broadcast frames on IFACE for that
                                      long (traffic for the guest to be
                                      busy with); prints how many
"""
import socket
import struct
import sys
import time


def records(path):
    with open(path, 'rb') as f:
        hdr = f.read(24)
        if len(hdr) < 24:
            sys.exit('%s: not a pcap file' % path)
        magic = struct.unpack('<I', hdr[:4])[0]
        if magic in (0xa1b2c3d4, 0xa1b23c4d):
            end = '<'
        elif magic in (0xd4c3b2a1, 0x4d3cb2a1):
            end = '>'
        else:
            sys.exit('%s: not a pcap file' % path)
        while True:
            rh = f.read(16)
            if len(rh) < 16:
                return
            _, _, caplen, wirelen = struct.unpack(end + 'IIII', rh)
            yield hdr, rh, f.read(caplen), wirelen


def select(src, dst, mac=None):
    n = 0
    with open(dst, 'wb') as out:
        for hdr, rh, data, wirelen in records(src):
            if n == 0 and out.tell() == 0:
                out.write(hdr)
            if len(data) == wirelen and 60 <= wirelen <= 1514:
                if mac and n % 3 == 0:
                    data = bytes.fromhex(mac.replace(':', '')) + data[6:]
                out.write(rh + data)
                n += 1
        if out.tell() == 0:
            sys.exit('%s: no records' % src)
    print(n)


def send(iface, path):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    for i, (_, _, data, _) in enumerate(records(path)):
        s.send(data)
        # The tap's queue holds 1000 frames and the emulated NIC drains
        # it slowly: pace the bursts so none is dropped on the way in.
        if i % 32 == 31:
            time.sleep(0.02)


def flood(iface, seconds):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    frame = (b'\xff' * 6 + bytes.fromhex('020000000001') + b'\x88\xb5' +
             bytes(46))
    n, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(16):
            try:
                s.send(frame)
                n += 1
            except OSError:     # the tap's queue is full: let it drain
                break
        time.sleep(0.001)
    print(n)


def compare(want_path, got_path):
    want = [r[2] for r in records(want_path)]
    got = [r[2] for r in records(got_path)]
    if want == got:
        print('%d frames, identical' % len(want))
        return 0
    print('want %d frames, got %d' % (len(want), len(got)))
    for i in range(max(len(want), len(got))):
        w = want[i] if i < len(want) else None
        g = got[i] if i < len(got) else None
        if w != g:
            print('first difference at frame %d:' % i)
            print('  want', w.hex() if w else None)
            print('  got ', g.hex() if g else None)
            break
    return 1


def main():
    a = sys.argv[1:]
    if len(a) in (3, 4) and a[0] == 'select':
        select(a[1], a[2], a[3] if len(a) == 4 else None)
    elif len(a) == 3 and a[0] == 'send':
        send(a[1], a[2])
    elif len(a) == 3 and a[0] == 'compare':
        sys.exit(compare(a[1], a[2]))
    elif len(a) == 3 and a[0] == 'flood':
        flood(a[1], float(a[2]))
    elif len(a) == 2 and a[0] == 'count':
        print(sum(1 for _ in records(a[1])))
    else:
        sys.exit(__doc__)


main()
