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

for target, blobs in seeds.items():
    d = os.path.join(OUT, target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for name, blob in blobs.items():
        open(os.path.join(d, name), "wb").write(blob)
    print(f"{target}: {len(blobs)} seeds, {sum(map(len, blobs.values()))} bytes")
