"""Bumble's side of the benchmarks: the same input bytes through Bumble's own decoders.

usage: bumble_bench.py WORKLOAD INPUT_FILE ITERATIONS  -> prints {"operationsPerSecond": N}
(for the l2cap workloads, N is SDU bytes per second; the gatt_server workloads read no input
and also print "cpuSecondsPerOperation")
"""
import asyncio
import json
import sys
import time

from bumble import att, gatt, gatt_server, hci, l2cap
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


class _CountingDevice:
    """What bumble.gatt_server.Server calls on its Device while it serves a link: every L2CAP PDU
    it would send is counted (octets per connection handle) instead. A request's answer is
    awaited with `expect(n)`: a future done when `n` more PDUs have been sent."""

    class _ChannelManager:
        le_coc_channels: dict = {}

    def __init__(self):
        self.l2cap_channel_manager = self._ChannelManager()
        self.octets = {}
        self.pdus = 0
        self.last = b""
        self._target, self._done = 0, None

    def send_l2cap_pdu(self, connection_handle, cid, pdu):
        self.octets[connection_handle] = self.octets.get(connection_handle, 0) + len(pdu)
        self.pdus += 1
        self.last = pdu
        if self._done is not None and self.pdus >= self._target:
            self._done.set_result(None)
            self._done = None

    def expect(self, count):
        self._target = self.pdus + count
        self._done = asyncio.get_running_loop().create_future()
        return self._done


class _Link:
    """The attributes of bumble.device.Connection that the server reads on an ATT bearer."""

    def __init__(self, handle):
        self.handle = handle
        self.att_mtu = att.ATT_DEFAULT_MTU
        self.encryption = 0
        self.authenticated = False


def _server_database():
    """The gatt-server workload's database, handle for handle: Generic Access 0x0001-0x0005
    (Device Name "bench", Appearance), Generic Attribute 0x0006-0x000B (Service Changed with
    its CCCD, Database Hash), Battery 0x000C-0x000F (Battery Level 0x2A19 read + notify,
    value 0x64, at 0x000E; its CCCD at 0x000F)."""
    readable = gatt.Characteristic.READABLE
    level = gatt.Characteristic(gatt.GATT_BATTERY_LEVEL_CHARACTERISTIC,
                                gatt.Characteristic.Properties.READ | gatt.Characteristic.Properties.NOTIFY,
                                readable, bytes([0x64]))
    return [
        gatt.Service(gatt.GATT_GENERIC_ACCESS_SERVICE, [
            gatt.Characteristic(gatt.GATT_DEVICE_NAME_CHARACTERISTIC, gatt.Characteristic.Properties.READ,
                                readable, b"bench"),
            gatt.Characteristic(gatt.GATT_APPEARANCE_CHARACTERISTIC, gatt.Characteristic.Properties.READ,
                                readable, bytes(2)),
        ]),
        gatt.Service(gatt.GATT_GENERIC_ATTRIBUTE_SERVICE, [
            gatt.Characteristic(gatt.GATT_SERVICE_CHANGED_CHARACTERISTIC, gatt.Characteristic.Properties.INDICATE,
                                0, bytes(4)),
            gatt.Characteristic(gatt.GATT_DATABASE_HASH_CHARACTERISTIC, gatt.Characteristic.Properties.READ,
                                readable, bytes(16)),
        ]),
        gatt.Service(gatt.GATT_BATTERY_SERVICE, [level]),
    ], level


# Vol 3, Part F, 3.4.5.1 Write Request: the level's CCCD (0x000F) <- 0x0001 (notifications);
# 3.4.4.3 Read Request: the level's value (0x000E).
_ENABLE_NOTIFICATIONS = bytes([0x12, 0x0F, 0x00, 0x01, 0x00])
_READ_LEVEL = bytes([0x0A, 0x0E, 0x00])
_NOTIFIED_VALUE = bytes([0x01, 0x02, 0x03, 0x04])
# Requests handed to the server before the loop runs their tasks (each read is a task of its own).
_READ_BATCH = 1000


async def _gatt_server(clients):
    """Bumble's gatt_server.Server on a counting device, `clients` links that enabled
    notifications of the level through the server's own Write Request handling."""
    device = _CountingDevice()
    server = gatt_server.Server(device)
    services, level = _server_database()
    server.add_services(services)
    if level.handle != 0x000E:
        raise RuntimeError(f"Battery Level at handle 0x{level.handle:04X}, not 0x000E as in ours")
    links = [_Link(0x0040 + n) for n in range(clients)]
    answered = device.expect(clients)
    for link in links:
        server.on_gatt_pdu(link, att.ATT_PDU.from_bytes(_ENABLE_NOTIFICATIONS))
    await answered
    if device.last != bytes([0x13]) or len(server.subscribers) != clients:
        raise RuntimeError(f"{len(server.subscribers)} of {clients} links subscribed")
    return device, server, level, links


class _Served:
    """A server built by _gatt_server, and what the timed runs check against it."""

    def __init__(self, device, server, level, links):
        self.device, self.server, self.level, self.links = device, server, level, links

    def check_last(self, expected, what):
        if self.device.last != expected:
            raise RuntimeError(f"{what}: the server sent {self.device.last.hex()}, expected {expected.hex()}")


def _timed(clients, body, operations):
    """Builds the server untimed, then runs the coroutine function `body(served)` 3 times on
    one event loop: the best wall time, and the CPU seconds (process time) per operation over
    all 3 runs."""
    async def run():
        served = _Served(*await _gatt_server(clients))
        best, cpu = float("inf"), 0.0
        for _ in range(3):
            cpu_start, start = time.process_time(), time.perf_counter()
            await body(served)
            best = min(best, time.perf_counter() - start)
            cpu += time.process_time() - cpu_start
        return best, cpu
    best, cpu = asyncio.run(run())
    return {"operationsPerSecond": operations / best, "cpuSecondsPerOperation": cpu / (3 * operations)}


# Vol 3, Part F, 3.4.7.1 Handle Value Notification of the level (0x000E).
_NOTIFICATION = bytes([0x1B, 0x0E, 0x00]) + _NOTIFIED_VALUE
# 3.4.4.4 Read Response with the level's value.
_READ_RESPONSE = bytes([0x0B, 0x64])


def _notifications(clients, iterations):
    """`iterations` values, each with Server.notify_subscribers to every subscribed link, the
    API that matches ours (one call notifies every subscriber); counted per link. Also
    Server.notify_subscriber awaited per link, Bumble's cheaper path (no task per link)."""
    async def through_subscribers(served):
        sent = served.device.pdus
        for _ in range(iterations):
            await served.server.notify_subscribers(served.level, _NOTIFIED_VALUE)
        if served.device.pdus - sent != iterations * clients:
            raise RuntimeError(f"{served.device.pdus - sent} notifications sent, {iterations * clients} expected")
        served.check_last(_NOTIFICATION, "notify_subscribers")

    async def per_subscriber(served):
        for _ in range(iterations):
            for link in served.links:
                await served.server.notify_subscriber(link, served.level, _NOTIFIED_VALUE)
        served.check_last(_NOTIFICATION, "notify_subscriber")

    figures = _timed(clients, through_subscribers, iterations * clients)
    direct = _timed(clients, per_subscriber, iterations * clients)
    figures["notifySubscriberOperationsPerSecond"] = direct["operationsPerSecond"]
    figures["notifySubscriberCpuSecondsPerOperation"] = direct["cpuSecondsPerOperation"]
    return figures


def gatt_server_notify_1(iterations):
    return _notifications(1, iterations)


def gatt_server_notify_8(iterations):
    return _notifications(8, iterations // 8)


def gatt_server_read(iterations):
    """Read Requests of the level: each decoded (ATT_PDU.from_bytes) and handed to
    Server.on_gatt_pdu, which answers in a task of its own; batches of _READ_BATCH requests,
    each batch awaited until every response was sent."""
    async def reads(served):
        link = served.links[0]
        for first in range(0, iterations, _READ_BATCH):
            count = min(_READ_BATCH, iterations - first)
            answered = served.device.expect(count)
            for _ in range(count):
                served.server.on_gatt_pdu(link, att.ATT_PDU.from_bytes(_READ_LEVEL))
            await answered
        served.check_last(_READ_RESPONSE, "Read Request")

    return _timed(1, reads, iterations)


# The GATT server's own cost: no input bytes; each returns the figures to print.
SERVER = {"gatt_server_notify_1": gatt_server_notify_1, "gatt_server_notify_8": gatt_server_notify_8,
          "gatt_server_read": gatt_server_read}

WORKLOADS = {"scan": scan, "notify": notify, "l2cap_host": l2cap_host, "l2cap_frames": l2cap_frames,
             "l2cap_send": l2cap_send}
# Untimed preparation of the input, and workloads whose operations are the bytes they return.
PREPARE = {"l2cap_frames": l2cap_frames_input, "l2cap_send": l2cap_frames_input}
BYTES = {"l2cap_host", "l2cap_frames", "l2cap_send"}


def main():
    workload, path, iterations = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if workload in SERVER:
        print(json.dumps(SERVER[workload](iterations)))
        return
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
