"""Bumble's side of the benchmarks: the same input bytes through Bumble's own decoders.

usage: bumble_bench.py WORKLOAD INPUT_FILE ITERATIONS  -> prints {"operationsPerSecond": N}
"""
import json
import sys
import time

from bumble import att, hci, l2cap
from bumble.core import AdvertisingData


def split_h4(data: bytes):
    packets, i = [], 0
    while i < len(data):
        kind = data[i]
        if kind == 0x04:
            n = 3 + data[i + 2]
        elif kind == 0x02:
            n = 5 + (data[i + 3] | data[i + 4] << 8)
        else:
            raise ValueError(f"unexpected packet type {kind}")
        packets.append(data[i:i + n])
        i += n
    return packets


def scan(packets):
    """H4 bytes -> HCI packet -> reports -> AdvertisingData -> filter on 180D."""
    matched = 0
    for raw in packets:
        event = hci.HCI_Packet.from_bytes(raw)
        for report in event.reports:
            ad = AdvertisingData.from_bytes(report.data)
            uuids = ad.get(AdvertisingData.COMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS) or []
            if any(str(u) == "180D" or getattr(u, "to_hex_str", lambda: "")() == "180D" for u in uuids):
                matched += 1
    return matched


def notify(packets):
    """H4 bytes -> ACL packet -> reassembly -> L2CAP PDU -> ATT PDU -> route by handle."""
    routed = 0
    routes = {}

    def on_pdu(data):
        nonlocal routed
        pdu = l2cap.L2CAP_PDU.from_bytes(data)
        if pdu.cid == 0x0004:
            value = att.ATT_PDU.from_bytes(pdu.payload)
            routes.get(value.attribute_handle)
            routed += 1

    assemblers = {}
    for raw in packets:
        packet = hci.HCI_Packet.from_bytes(raw)
        assembler = assemblers.get(packet.connection_handle)
        if assembler is None:
            assembler = assemblers[packet.connection_handle] = hci.HCI_AclDataPacketAssembler(on_pdu)
        assembler.feed_packet(packet)
    return routed


WORKLOADS = {"scan": scan, "notify": notify}


def main():
    workload, path, iterations = sys.argv[1], sys.argv[2], int(sys.argv[3])
    packets = split_h4(open(path, "rb").read())[:iterations]
    fn = WORKLOADS[workload]
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        fn(packets)
        best = min(best, time.perf_counter() - start)
    print(json.dumps({"operationsPerSecond": len(packets) / best}))


if __name__ == "__main__":
    main()
