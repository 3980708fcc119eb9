#!/usr/bin/env python3
"""Writes the seed corpora in Fuzz/corpus/<target>/ from the real captures.

Every seed is cut from Fixtures/captures/real/*.btsnoop (H4, datalink 1002) or from
Fixtures/advertising/real-payloads.tsv (itself taken from those captures), re-framed into
the input layout of its fuzz target (see the target's doc comment). Run from the repository
root; it replaces the seed directories.
"""
import glob, hashlib, os, shutil, struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "Fuzz", "corpus")

def records(path):
    data = open(path, "rb").read()
    assert data[:8] == b"btsnoop\0" and struct.unpack(">I", data[12:16])[0] == 1002
    at = 16
    while at + 24 <= len(data):
        _, incl, flags, _, _ = struct.unpack(">IIIIq", data[at:at + 24])
        yield data[at:at + 24 + incl], data[at + 24:at + 24 + incl]
        at += 24 + incl

seeds = {}
def seed(target, blob, limit=40):
    s = seeds.setdefault(target, {})
    if len(s) < limit:
        s.setdefault(hashlib.sha1(blob).hexdigest()[:16], blob)

captures = sorted(glob.glob(os.path.join(ROOT, "Fixtures/captures/real/*.btsnoop")))
seen_event, seen_cmd, seen_att, seen_sig = set(), set(), set(), set()
return_selector = {0x1001: 0, 0x1009: 1, 0x1005: 2, 0x2002: 3, 0x2060: 4, 0x1002: 5,
                   0x1003: 6, 0x2003: 7, 0x1405: 8, 0x2030: 9, 0x2023: 10}
acl_fragments = []
for path in captures:
    stream, snoop = b"", b""
    header = open(path, "rb").read()[:16]
    for raw_record, pkt in records(path):
        if not pkt:
            continue
        kind = pkt[0]
        if len(stream) + len(pkt) <= 4096:
            stream += pkt
        if len(snoop) + len(raw_record) <= 8000:
            snoop += raw_record
        if kind == 0x04 and len(pkt) >= 3:
            code, params = pkt[1], pkt[3:]
            key = (code, params[0] if code == 0x3E and params else None)
            if key not in seen_event or (code == 0x3E and len(seen_event) < 200 and key[1] in (2, 0x0D) and len(seeds.get("HCIEvent", {})) < 30):
                seen_event.add(key)
                seed("HCIEvent", bytes([code]) + params)
            if code == 0x0E and len(params) >= 3:
                op = params[1] | params[2] << 8
                if op in return_selector:
                    seed("ReturnParameters", bytes([return_selector[op]]) + params[3:])
        elif kind == 0x01 and len(pkt) >= 4:
            op = pkt[1] | pkt[2] << 8
            if op not in seen_cmd:
                seen_cmd.add(op)
                seed("HCICommand", pkt[1:3] + pkt[4:], limit=60)
        elif kind == 0x02 and len(pkt) >= 5:
            hf = pkt[1] | pkt[2] << 8
            data = pkt[5:]
            acl_fragments.append(((hf >> 12) & 3, data))
            if (hf >> 12) & 3 in (0, 2) and len(data) >= 4:
                length, cid = struct.unpack("<HH", data[:4])
                sdu = data[4:]
                if length != len(sdu) or not sdu:
                    continue
                if cid == 4 and (sdu[0], len(sdu) > 3) not in seen_att:
                    seen_att.add((sdu[0], len(sdu) > 3))
                    seed("ATTPDU", sdu, limit=60)
                if cid == 5 and sdu[0] not in seen_sig:
                    seen_sig.add(sdu[0])
                    seed("L2CAPSignaling", sdu)
    seed("H4Framer", stream)
    seed("BTSnoop", bytes([2]) + header + snoop)
    seed("BTSnoop", bytes([0]) + snoop[:2000])

# ACL: selector, fragment count, fragments (header: boundary << 6 | length), then a payload.
small = [(pb, d) for pb, d in acl_fragments if len(d) <= 63]
for i in range(0, min(len(small), 12 * 6), 6):
    group = small[i:i + 6]
    blob = bytes([5, len(group)])
    for pb, d in group:
        blob += bytes([pb << 6 | len(d)]) + d
    tail = group[-1][1][4:] if len(group[-1][1]) > 4 else b"\x0b\x01\x02"
    blob += bytes([20]) + struct.pack("<H", 4) + tail
    seed("ACLReassembly", blob)

# Advertising data: selector byte, then the data field.
for n, line in enumerate(open(os.path.join(ROOT, "Fixtures/advertising/real-payloads.tsv"))):
    if line.startswith("#"):
        continue
    hexdata = line.rstrip("\n").split("\t")[6]
    seed("AdvertisingData", bytes([n * 37 & 0x7F]) + bytes.fromhex(hexdata), limit=60)

# Enhanced credit-based signaling (Core Spec 5.4 Vol 3, Part A, 4.25-4.28), in the layouts of
# the specification: the captures above hold none.
for hexdata in ["1703 0c00 2700 4000 4000 0500 4000 4100",      # CONNECTION_REQ, SPSM 0x0027, 2 SCIDs
                "1803 0c00 4000 4000 0500 0400 5000 0000",      # CONNECTION_RSP, one refused (0x0004)
                "1804 0800 0000 0000 0000 0200",                # CONNECTION_RSP, all refused, no DCID
                "1904 0a00 0004 6400 4000 4100 4200",           # RECONFIGURE_REQ, 3 CIDs
                "1a04 0200 0100"]:                              # RECONFIGURE_RSP, MTU reduction refused
    seed("L2CAPSignaling", bytes.fromhex(hexdata.replace(" ", "")), limit=60)

# The raw ACL inlet (Fuzz/Targets/ACLInlet.swift): an options octet, then records. Op 0: an
# ACL packet (flags: handle selector | Packet_Boundary_Flag << 2, u16 length, data); op 2: a
# PDU cut into fragments (flags, CID, announced length, payload length, fragment size, skip
# mask); op 3: a new ATT bound; op 4: late ATT handlers; op 5: Disconnection Complete.
def inlet_packet(handle_sel, boundary, data):
    return bytes([0, handle_sel | boundary << 2]) + struct.pack("<H", len(data)) + data
def inlet_pdu(handle_sel, start, cid, announced, length, fragment, skip=0):
    return bytes([2, handle_sel | start << 2]) + struct.pack("<HHHH", cid, announced, length, fragment) + bytes([skip])
def l2cap(cid, payload):
    return struct.pack("<HH", len(payload), cid) + payload
# Handle Value Notification (Vol 3, Part F, 3.4.7.1), handle 0x0007, value 01..05.
note = l2cap(4, bytes([0x1B, 0x07, 0x00, 1, 2, 3, 4, 5]))
# Pairing Random (Vol 3, Part H, 3.5.4) and LE Credit Based Connection Request (Vol 3, Part A,
# 4.22: PSM 0x0080, SCID 0x0040, MTU 100, MPS 30, 5 credits), then K-frames (3.4.2) to our
# CID 0x0040: one SDU of 4 octets, one K-frame past the MPS.
smp = l2cap(6, bytes([0x04]) + bytes(range(0x10, 0x20)))
lecbc = l2cap(5, bytes([0x14, 0x01, 0x0A, 0x00, 0x80, 0x00, 0x40, 0x00, 0x64, 0x00, 0x1E, 0x00, 0x05, 0x00]))
kframe = l2cap(0x40, struct.pack("<H", 4) + b"\x01\x02\x03\x04")
big_kframe = l2cap(0x40, struct.pack("<H", 60) + bytes(58))
for options, body in [
    (0x0C, inlet_packet(0, 2, note)),                                             # whole, raw receiver
    (0x1C, inlet_packet(0, 2, note[:6]) + inlet_packet(0, 1, note[6:])),          # two fragments, receiver declines
    (0x00, inlet_packet(0, 2, note) + bytes([4])),                                # early PDU, then handlers
    (0x85, inlet_pdu(0, 2, 4, 600, 600, 27) + inlet_pdu(1, 2, 4, 8, 8, 27)),      # 600 octets at 247, then 8
    (0x07, inlet_pdu(0, 2, 4, 65535, 65535, 251)),                                # 64 KiB in 251-octet fragments
    (0x07, inlet_pdu(0, 2, 4, 65531, 65531, 65535)),                              # 64 KiB in one ACL packet
    (0x04, inlet_pdu(0, 2, 4, 600, 600, 4)),                                      # the header alone first
    (0x04, inlet_pdu(0, 2, 4, 40, 40, 2, skip=0b10)),                             # split header, a fragment lost
    (0x04, inlet_packet(0, 1, note[4:]) + inlet_packet(2, 2, note) + inlet_packet(3, 2, note)),  # continuation without start; unknown and foreign handles
    (0x24, inlet_packet(0, 2, smp[:9]) + inlet_packet(0, 1, smp[9:])),
    (0x44, inlet_packet(0, 2, lecbc) + inlet_packet(0, 2, kframe) + inlet_packet(0, 2, big_kframe)),
    (0x04, inlet_packet(0, 2, l2cap(5, bytes(40)))),                              # signaling past MTUsig
    (0x06, bytes([3, 0x17, 0x00]) + inlet_packet(0, 2, l2cap(4, bytes([0x1B, 0x07, 0x00]) + bytes(21)))),  # bound 23, 24 octets
    (0x84, inlet_packet(0, 2, note[:6]) + bytes([5, 0]) + inlet_packet(0, 1, note[6:]) + bytes([6, 0, 3])),
]:
    seed("ACLInlet", bytes([options]) + body)
real = [(pb, d) for pb, d in acl_fragments if len(d) <= 251][:60]
for i in range(0, len(real), 12):
    seed("ACLInlet", bytes([0x2C]) + b"".join(inlet_packet(0, pb, d) for pb, d in real[i:i + 12]))
# Inputs at the real maxima; the captures hold nothing this large.
# Extended advertising data of 1,650 octets, the most LE Set Extended Advertising Data takes
# (Vol 4, Part E, 7.8.54): the real payloads above, structure after structure, then one
# Manufacturer Specific Data structure (0xFF) filling the rest; and the same length made of
# the longest AD structures there are (length octet 0xFF: type + 254 octets).
real_ad = [bytes.fromhex(line.rstrip("\n").split("\t")[6])
           for line in open(os.path.join(ROOT, "Fixtures/advertising/real-payloads.tsv")) if not line.startswith("#")]
EXTENDED_AD_MAX = 1650
def fill_ad(parts):
    out = b""
    for part in parts:
        if part and len(out) + len(part) <= EXTENDED_AD_MAX - 3:
            out += part
    rest = EXTENDED_AD_MAX - len(out)
    return out + bytes([rest - 1, 0xFF]) + bytes(range(rest - 2))
seed("AdvertisingData", bytes([0]) + fill_ad(real_ad), limit=80)
seed("AdvertisingData", bytes([3]) + fill_ad(reversed(real_ad)), limit=80)
longest = b"".join(bytes([0xFF, 0xFF]) + bytes([i]) * 254 for i in range(6))
seed("AdvertisingData", bytes([1]) + longest + bytes([EXTENDED_AD_MAX - len(longest) - 1, 0x16, 0x0D, 0x18]) + bytes(EXTENDED_AD_MAX - len(longest) - 4), limit=80)

# ATT PDUs at ATT_MTU 517 (the largest, Vol 3, Part F, 3.2.9 and 3.4.2) and past 600 octets,
# with values of the captures' notifications repeated: Read Response and Read Blob Response of
# 516 value octets (a long read), a notification and an indication of 514, a Prepare Write
# Request of 512, a Read Multiple Variable Length Response, and a 600- and a 1,000-octet
# notification (longer than any ATT_MTU: what a hostile peer sends).
values = [sdu[3:] for sdu in seeds.get("ATTPDU", {}).values() if sdu[0] in (0x1B, 0x1D) and len(sdu) > 3] or [b"\x16\x48"]
def value(n, k=0):
    v = values[k % len(values)]
    return (v * (n // len(v) + 1))[:n]
for op, head, n in [(0x0B, b"", 516), (0x0D, b"", 516), (0x1B, b"\x2a\x00", 514), (0x1D, b"\x2a\x00", 514),
                    (0x16, b"\x2a\x00\x00\x02", 512), (0x1B, b"\x2a\x00", 597), (0x1B, b"\x2a\x00", 997)]:
    seed("ATTPDU", bytes([op]) + head + value(n, op), limit=80)
seed("ATTPDU", b"\x21" + b"".join(struct.pack("<H", 255) + value(255, i) for i in range(2)) + struct.pack("<H", 2) + b"\x01\x02", limit=80)

# HCI socket datagrams (indicator, then the packet): one of each command, event and ACL
# packet kind of the captures, an ACL packet of 65,535 data octets (the longest the length
# field allows, Vol 4, Part E, 5.4.2) and one cut short.
for raw_record, pkt in records(captures[0]) if captures else []:
    if pkt and pkt[0] in (0x01, 0x02, 0x04):
        seed("HCIDatagram", pkt, limit=30)
pdu = struct.pack("<HH", 65531, 0x0040) + bytes(i & 0xFF for i in range(65531))
seed("HCIDatagram", b"\x02\x40\x20" + struct.pack("<H", len(pdu)) + pdu, limit=40)
seed("HCIDatagram", b"\x02\x40\x20" + struct.pack("<H", 600) + pdu[:300], limit=40)

# GATT values: selector (the type, see Fuzz/Targets/GATTValues.swift), then a value in the
# layout of its characteristic (GATT Specification Supplement, 3.x): Heart Rate Measurement
# with 16-bit rate, energy and RR-Intervals, and one with as many RR-Intervals as ATT_MTU 517
# carries; Date Time 2026-12-02 12:00:00; Temperature Measurement 36.4 (FLOAT 0xFF00016C),
# with time stamp and type; Current Time; PnP ID; Appearance 0x0341; and 512-octet values (the
# longest attribute value, Vol 3, Part F, 3.2.9) for the byte and string decoders.
date_time = struct.pack("<HBBBBB", 2026, 12, 2, 12, 0, 0)
for selector, v in [(0, b"\x64"), (1, b"\x34\x12"), (2, b"\x78\x56\x34\x12"), (3, bytes(range(1, 9))),
                    (4, b"\xf6"), (5, b"\x00\x80"), (6, b"\xff\xff\xff\x7f"), (7, bytes(range(256)) * 2),
                    (8, ("Gerät-" * 73 + "x").encode()), (9, b"\x19\x48\x00\x10\x27\x00\x04\xf0\x03"),
                    (9, b"\x10\x48" + b"\x00\x04" * 255), (10, b"\x5a"), (11, b"\x01"), (12, date_time),
                    (13, b"\x06\x6c\x01\x00\xff" + date_time + b"\x02"), (14, date_time + b"\x03\x80\x01"),
                    (15, b"\x01\x0d\x00\x00\x00\x10\x01"), (16, b"\x41\x03")]:
    seed("GATTValues", bytes([selector]) + v, limit=40)

# GATT server input: a choices octet, then length-prefixed client PDUs. The requests and
# commands of the captures (Exchange MTU, discovery, reads, writes, prepared writes), one seed
# each with every choice, and all of them in capture order as one session.
requests = [sdu for sdu in seeds.get("ATTPDU", {}).values()
            if len(sdu) <= 255 and (sdu[0] in (0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x1E, 0x20, 0x52, 0xD2))]
session = b"".join(bytes([len(r)]) + r for r in requests)
for choices in range(8):
    seed("GATTServerPDU", bytes([choices]) + session, limit=60)
for r in requests:
    seed("GATTServerPDU", b"\x00" + bytes([len(r)]) + r, limit=60)
# A prepare queue flood: 20 Prepare Write Requests to the value 0x0009, then Execute Write.
flood = b"".join(bytes([8]) + b"\x16\x09\x00" + struct.pack("<H", 3 * i) + b"abc" for i in range(20)) + b"\x02\x18\x01"
seed("GATTServerPDU", b"\x00" + flood, limit=60)

for target, blobs in seeds.items():
    d = os.path.join(OUT, target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for name, blob in blobs.items():
        open(os.path.join(d, name), "wb").write(blob)
    print(f"{target}: {len(blobs)} seeds, {sum(map(len, blobs.values()))} bytes")
