#!/usr/bin/python3
# esp-peer.py: scapy's ESP (scapy.layers.ipsec, AES-GCM with ESN) as the
# independent peer of snb-esp in tests/esp.bats.
#
#   clear OUT N SRC DST		N frames: Ethernet | IPv6 SRC->DST | UDP |
#				payloads of 0..N*7 bytes (sizes vary, so
#				every padding length shows up)
#   check CLEAR ESP KEY SPI LOCAL REMOTE FIRST
#				every frame of ESP is ESP tunnel mode from
#				LOCAL to REMOTE with SPI and sequence
#				numbers FIRST, FIRST+1, ...; scapy decrypts
#				it (ESN: the high half from that number)
#				and finds the frame of CLEAR at the same
#				place, inner packet byte for byte
#   make OUT KEY SPI SRC DST SEQ[:how]...
#				one ESP frame per SEQ (64-bit, decimal or
#				0x), how: ok (default), icv (a flipped ICV
#				bit), spi (SPI + 1), short (cut to 20 bytes
#				of ESP), from=ADDR (the inner packet's
#				source, SRC otherwise); the inner packet is
#				an IPv6/UDP packet whose payload names SEQ;
#				SEQ may be
#				a range FIRST..LAST[:how], one frame per
#				number of it (a peer whose number jumped
#				k * 2^32 ahead: 0x300000011..0x300000020)
#   inner IN			print the UDP payloads of the IPv6 frames
#				of IN, one a line
#   nonces ESP KEY SPI LOCAL REMOTE
#				the frames of ESP (one SA's, numbers below
#				2^32) have IVs that strictly increase, the
#				low half of each the frame's sequence
#				number, so no nonce (salt | IV) repeats;
#				scapy decrypts the first frame, and the
#				frames on both sides of every gap in the
#				numbers (where a successor began); prints
#				"FRAMES GAPS DECRYPTED"
import struct
import sys

from scapy.all import Ether, IPv6, UDP, Raw, rdpcap, wrpcap, raw
from scapy.layers.ipsec import SecurityAssociation, ESP

MAC_A = "02:00:00:00:00:01"
MAC_B = "02:00:00:00:00:02"


def num(s):
    return int(s, 0)


def sa_for(key, spi, local, remote):
    return SecurityAssociation(ESP, spi=spi, crypt_algo="AES-GCM",
                               crypt_key=bytes.fromhex(key[2:]),
                               auth_algo="NULL", auth_key=None,
                               tunnel_header=IPv6(src=local, dst=remote),
                               esn_en=True)


def clear(out, n, src, dst):
    frames = []
    for i in range(int(n)):
        pay = bytes((i + j) & 0xff for j in range(i * 7 % 1400))
        frames.append(Ether(src=MAC_A, dst=MAC_B) /
                      IPv6(src=src, dst=dst, hlim=64) /
                      UDP(sport=1000 + i, dport=9) / Raw(pay))
    wrpcap(out, frames)


def check(clearf, espf, key, spi, local, remote, first):
    spi, first = num(spi), num(first)
    sa = sa_for(key, spi, local, remote)
    plain = rdpcap(clearf)
    enc = rdpcap(espf)
    if len(plain) != len(enc):
        sys.exit("%d clear frames, %d ESP frames" % (len(plain), len(enc)))
    for i, (p, e) in enumerate(zip(plain, enc)):
        seq = first + i
        ip = e[IPv6]
        if ip.src != local or ip.dst != remote or ip.nh != 50:
            sys.exit("frame %d: outer %s -> %s nh %d" %
                     (i, ip.src, ip.dst, ip.nh))
        esp = ip[ESP]
        if esp.spi != spi or esp.seq != seq & 0xffffffff:
            sys.exit("frame %d: spi 0x%x seq %d, expected 0x%x %d" %
                     (i, esp.spi, esp.seq, spi, seq & 0xffffffff))
        # RFC 4303 2.4: the ESP payload ends on a 4-byte boundary.
        if (len(esp) - 8 - 8 - 16) % 4 != 0:
            sys.exit("frame %d: ciphertext of %d bytes" %
                     (i, len(esp) - 32))
        try:
            d = sa.decrypt(IPv6(raw(ip)), esn_en=True, esn=seq >> 32)
        except Exception as x:
            sys.exit("frame %d (seq %d): scapy: %s" % (i, seq, x))
        if raw(d) != raw(p[IPv6]):
            sys.exit("frame %d: inner packet differs" % i)
    print("ok %d" % len(enc))


def make(out, key, spi, src, dst, seqs):
    spi = num(spi)
    sa = sa_for(key, spi, src, dst)
    frames = []
    expanded = []
    for s in seqs:
        seq, _, how = s.partition(":")
        first, dots, last = seq.partition("..")
        for n in range(num(first), num(last if dots else first) + 1):
            expanded.append((n, how))
    for seq, how in expanded:
        isrc = src
        if how.startswith("from="):
            isrc, how = how[5:], ""
        inner = (IPv6(src=isrc, dst=dst, hlim=64) /
                 UDP(sport=2000, dport=9) / Raw(b"seq %d" % seq))
        # scapy reads seq_num=0 and esn=0 as "the SA's own": set those.
        sa.seq_num, sa.esn = seq & 0xffffffff, seq >> 32
        e = sa.encrypt(inner)
        b = bytearray(raw(e))
        if how == "icv":
            b[-1] ^= 1
        elif how == "spi":
            b[40:44] = struct.pack(">I", spi + 1)
        elif how == "short":
            del b[60:]
            b[4:6] = struct.pack(">H", 20)
        elif how not in ("", "ok"):
            sys.exit("unknown how '%s'" % how)
        frames.append(Ether(src=MAC_B, dst=MAC_A) / IPv6(bytes(b)))
    wrpcap(out, frames)


def inner(path):
    for p in rdpcap(path):
        print(p[Raw].load.decode() if Raw in p else "-")


def nonces(espf, key, spi, local, remote):
    spi = num(spi)
    sa = sa_for(key, spi, local, remote)
    enc = rdpcap(espf)
    prev, gaps, opened = None, 0, 0
    for i, e in enumerate(enc):
        ip = e[IPv6]
        b = raw(ip[ESP])
        sp, seq = struct.unpack(">II", b[:8])
        iv = struct.unpack(">Q", b[8:16])[0]
        if sp != spi or iv & 0xffffffff != seq or iv >> 32 != 0:
            sys.exit("frame %d: spi 0x%x seq %d IV 0x%x" % (i, sp, seq, iv))
        if prev is not None and iv <= prev:
            sys.exit("frame %d: IV %d after %d: a nonce again" %
                     (i, iv, prev))
        gap = prev is not None and iv != prev + 1
        gaps += gap
        nxt = i + 1 < len(enc) and \
            struct.unpack(">Q", raw(enc[i + 1][IPv6][ESP])[8:16])[0] != iv + 1
        if i == 0 or gap or nxt:
            try:
                sa.decrypt(IPv6(raw(ip)), esn_en=True, esn=0)
            except Exception as x:
                sys.exit("frame %d (seq %d): scapy: %s" % (i, seq, x))
            opened += 1
        prev = iv
    print("%d %d %d" % (len(enc), gaps, opened))


cmd = sys.argv[1]
if cmd == "clear":
    clear(*sys.argv[2:6])
elif cmd == "check":
    check(*sys.argv[2:9])
elif cmd == "make":
    make(*sys.argv[2:7], sys.argv[7:])
elif cmd == "inner":
    inner(sys.argv[2])
elif cmd == "nonces":
    nonces(*sys.argv[2:7])
else:
    sys.exit("usage: esp-peer.py clear|check|make|inner|nonces ...")
