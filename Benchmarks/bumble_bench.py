"""Bumble's side of the benchmarks: the same input bytes through Bumble's own decoders.

usage: bumble_bench.py WORKLOAD INPUT_FILE ITERATIONS  -> prints {"operationsPerSecond": N}
(for the l2cap workloads, N is SDU bytes per second)
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


class _Manager:
    """What a LeCreditBasedChannel calls on bumble.l2cap.ChannelManager while data flows:
    K-frames it sends are collected, credit indications are built and dropped."""

    def __init__(self):
        self.sent = []
        self.identifier = 0

    def send_pdu(self, connection, cid, pdu):
        self.sent.append(pdu)

    def send_control_frame(self, connection, cid, frame):
        bytes(frame)

    def next_identifier(self, connection):
        self.identifier = self.identifier % 255 + 1
        return self.identifier


def _channel(manager, mps, sink=None):
    channel = l2cap.LeCreditBasedChannel(
        manager, None, psm=0x80, source_cid=0x40, destination_cid=0x40,
        mtu=65535, mps=mps, credits=1 << 30, peer_mtu=65535, peer_mps=mps,
        peer_credits=65535, connected=True)
    channel.sink = sink
    return channel


def _kframes(packets):
    """The K-frame payloads of the H4 ACL packets (each one whole L2CAP PDU), untimed."""
    return [l2cap.L2CAP_PDU.from_bytes(hci.HCI_Packet.from_bytes(raw).data).payload for raw in packets]


def l2cap_host(packets):
    """H4 bytes -> ACL packet -> reassembly -> L2CAP PDU -> LeCreditBasedChannel.on_pdu
    (credits, SDU reassembly) -> sink. Returns the SDU bytes delivered."""
    received = 0

    def sink(sdu):
        nonlocal received
        received += len(sdu)

    mps = max(len(frame) for frame in _kframes(packets[:1000]))
    channel = _channel(_Manager(), mps, sink)
    cid = l2cap.L2CAP_PDU.from_bytes(hci.HCI_Packet.from_bytes(packets[0]).data).cid
    channels = {cid: channel}

    def on_pdu(data):
        pdu = l2cap.L2CAP_PDU.from_bytes(data)
        channels[pdu.cid].on_pdu(pdu.payload)

    assembler = hci.HCI_AclDataPacketAssembler(on_pdu)
    for raw in packets:
        assembler.feed_packet(hci.HCI_Packet.from_bytes(raw))
    return received


def l2cap_frames_input(packets):
    """The SDUs carried by the K-frames, and the MPS (the longest K-frame payload)."""
    frames = _kframes(packets)
    sdus = []
    channel = _channel(_Manager(), max(len(f) for f in frames), sdus.append)
    for frame in frames:
        channel.on_pdu(frame)
    return sdus, channel.mps


def l2cap_frames(job):
    """Each SDU through LeCreditBasedChannel.write (segmentation at the peer's MPS, credits)
    and each K-frame into a second channel's on_pdu (reassembly). Returns the SDU bytes."""
    sdus, mps = job
    received = 0

    def sink(sdu):
        nonlocal received
        received += len(sdu)

    manager = _Manager()
    sender, receiver = _channel(manager, mps), _channel(_Manager(), mps, sink)
    for sdu in sdus:
        sender.write(sdu)
        for frame in manager.sent:
            receiver.on_pdu(frame)
        manager.sent.clear()
    return received


class _ACLManager(_Manager):
    """Sends each K-frame as Bumble's Host.send_l2cap_pdu does: the L2CAP PDU's bytes cut into
    HCI ACL data packets of at most 251 bytes, each serialised as for the transport."""

    def __init__(self):
        super().__init__()
        self.sent_bytes = 0

    def send_pdu(self, connection, cid, pdu):
        sdu = bytes(l2cap.L2CAP_PDU(cid, pdu))
        for offset in range(0, len(sdu), 251):
            data = sdu[offset:offset + 251]
            packet = hci.HCI_AclDataPacket(connection_handle=0x0040, pb_flag=1 if offset > 0 else 0,
                                           bc_flag=0, data_total_length=len(data), data=data)
            self.sent_bytes += len(bytes(packet))


def l2cap_send(job):
    """Each SDU through LeCreditBasedChannel.write (credits, segmentation at the peer's MPS)
    down to serialised HCI ACL data packets. Returns the SDU bytes sent."""
    sdus, mps = job
    sender = _channel(_ACLManager(), mps)
    for sdu in sdus:
        sender.write(sdu)
    return sum(len(sdu) for sdu in sdus)


WORKLOADS = {"scan": scan, "notify": notify, "l2cap_host": l2cap_host, "l2cap_frames": l2cap_frames,
             "l2cap_send": l2cap_send}
# Untimed preparation of the input, and workloads whose operations are the bytes they return.
PREPARE = {"l2cap_frames": l2cap_frames_input, "l2cap_send": l2cap_frames_input}
BYTES = {"l2cap_host", "l2cap_frames", "l2cap_send"}


def main():
    workload, path, iterations = sys.argv[1], sys.argv[2], int(sys.argv[3])
    packets = split_h4(open(path, "rb").read())[:iterations]
    fn = WORKLOADS[workload]
    job = PREPARE.get(workload, lambda p: p)(packets)
    best = float("inf")
    operations = len(packets)
    for _ in range(3):
        start = time.perf_counter()
        result = fn(job)
        best = min(best, time.perf_counter() - start)
        if workload in BYTES:
            operations = result
    print(json.dumps({"operationsPerSecond": operations / best}))


if __name__ == "__main__":
    main()
