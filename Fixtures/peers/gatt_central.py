#!/usr/bin/env python3
"""Bumble as the GATT client of the stack's GATT server (the stack is the peripheral).

Two Bumble virtual controllers on one LocalLink, as in central_peer.py: one is exposed as H4
over TCP to the stack, the other carries a Bumble Device that scans, connects to the stack's
connectable advertisement and runs one scenario with Bumble's own GATT client. The server is
expected to hold the test database (Tests/IntegrationTests/PeripheralGATTRadioTests.swift,
Fixtures/gatt/serve.yaml):

    180F Battery: 2A19 [read, notify] = 0x64
    12345678-1234-5678-1234-56789ABCDEF0:
        ...DEF1 long     [read, write]                 100 octets of text
        ...DEF2 command  [read, writeWithoutResponse]  empty
        ...DEF3 counter  [read, indicate]              0x00

stdout, one JSON object a line, values in lowercase hex:
    {"ready": true, "port": 40123}
    {"connected": {"handle": 1}}
    ... the scenario's lines ...
    {"done": true}
Scenarios:
  procedures: MTU 64, discovery, a long read (Read Blob), a long write (prepared writes),
      a Write Command, Read Multiple, subscriptions (notification and indication, which Bumble
      confirms), raw malformed and oversized requests with the answers as received, a
      prepare-queue flood; it advertises "bumble-adv" while connected (for the stack's scan),
      then disconnects and reports the stack's advertisement again.
  eatt: MTU 64, discovery, then two enhanced ATT bearers (L2CAP enhanced credit-based
      channels on PSM 0x0027) with L2CAP MTUs 80 and 160; a Read of the long value on the
      unenhanced bearer and on both enhanced ones, sent at once ("eatt_reads": the values each
      bearer answered); the Battery Level CCCD written on an enhanced bearer, then the
      notification taken on the unenhanced one ("eatt_notification").
  serve: MTU 64, discovery, reads 2A19, writes the long value, a Write Command, subscribes to
      2A19, prints the notification; disconnects, connects again once the advertisement is
      back and reads the long value.
The script ends on SIGTERM or SIGINT, or --lifetime seconds (90) after it started.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from bumble import att, gatt_client, hci, l2cap
from bumble.core import UUID
from bumble.device import AdvertisingType, Device, Peer
from bumble.link import LocalLink

from central_bed import central_device, emit, host_controller, stop_on_signals

BATTERY_LEVEL = UUID.from_16_bits(0x2A19)
LONG = UUID("12345678-1234-5678-1234-56789ABCDEF1")
COMMAND = UUID("12345678-1234-5678-1234-56789ABCDEF2")
COUNTER = UUID("12345678-1234-5678-1234-56789ABCDEF3")


class RawRequest:
    """Bytes sent as an ATT request through Bumble's client, so that the answer (an Error
    Response included) comes back as the request's response. `name` is the request's name
    in Bumble (ATT_PREPARE_WRITE_REQUEST): its client takes only the matching response."""

    def __init__(self, name: str, data: bytes) -> None:
        self.name = name
        self.data = data

    def __bytes__(self) -> bytes:
        return self.data

    def __str__(self) -> str:
        return f"raw {self.name} {self.data.hex()}"


async def discover(peer: Peer) -> dict:
    services = await peer.discover_services()
    found = {}
    listed = []
    for service in services:
        await service.discover_characteristics()
        for c in service.characteristics:
            found[c.uuid] = c
            listed.append({"uuid": str(c.uuid), "handle": c.handle, "properties": int(c.properties)})
    emit({"services": [str(s.uuid) for s in services]})
    emit({"characteristics": listed})
    return found


async def raw(peer: Peer, name: str, data: bytes) -> bytes:
    response = await peer.gatt_client.send_request(RawRequest(name, data))
    return bytes(response)


async def procedures(device: Device, connection, peer: Peer) -> None:
    emit({"mtu": await peer.request_mtu(64)})
    found = await discover(peer)
    long, command, counter, level = found[LONG], found[COMMAND], found[COUNTER], found[BATTERY_LEVEL]
    # The stack scans while it serves: something to see.
    await device.start_advertising(advertising_type=AdvertisingType.UNDIRECTED,
                                   advertising_data=bytes([0x0B, 0x09]) + b"bumble-adv")
    emit({"read": {"uuid": str(LONG), "value": (await peer.read_value(long)).hex()}})
    written = bytes((i * 7) & 0xFF for i in range(150))
    await peer.write_value(long, written, with_response=True)
    emit({"long_write": {"value": (await peer.read_value(long)).hex()}})
    await peer.write_value(command, b"cmd", with_response=False)
    emit({"command": {"value": (await peer.read_value(command)).hex()}})
    response = await peer.gatt_client.send_request(
        att.ATT_Read_Multiple_Request(set_of_handles=[level.handle, command.handle]))
    emit({"read_multiple": bytes(response).hex()})

    notified: asyncio.Future = asyncio.get_running_loop().create_future()
    indicated: asyncio.Future = asyncio.get_running_loop().create_future()
    await peer.subscribe(level, lambda v: notified.done() or notified.set_result(bytes(v)), prefer_notify=True)
    await peer.subscribe(counter, lambda v: indicated.done() or indicated.set_result(bytes(v)), prefer_notify=False)
    emit({"subscribed": True})
    emit({"notification": {"handle": level.handle, "value": (await notified).hex()}})
    emit({"indication": {"handle": counter.handle, "value": (await indicated).hex()}})

    h = long.handle.to_bytes(2, "little")
    cases = [
        ("truncated", bytes([0x0A, h[0]])),
        ("unknown", bytes([0x3F, 0x01, 0x00])),
        ("past_mtu", bytes([0x12]) + h + bytes(70)),
        ("past_server_mtu", bytes([0x12]) + h + bytes(600)),
        ("blob_offset", bytes([0x0C]) + h + (200).to_bytes(2, "little")),
    ]
    for name, data in cases:
        emit({"raw": {"name": name, "answer": (await raw(peer, name, data)).hex()}})
    echoes = 0
    for i in range(64):
        answer = await raw(peer, "ATT_PREPARE_WRITE_REQUEST", bytes([0x16]) + h + i.to_bytes(2, "little") + bytes([i]))
        if answer == bytes([0x17]) + h + i.to_bytes(2, "little") + bytes([i]):
            echoes += 1
    full = await raw(peer, "ATT_PREPARE_WRITE_REQUEST", bytes([0x16]) + h + (64).to_bytes(2, "little") + bytes([64]))
    cancelled = await raw(peer, "ATT_EXECUTE_WRITE_REQUEST", bytes([0x18, 0x00]))
    emit({"flood": {"echoes": echoes, "full": full.hex(), "cancel": cancelled.hex()}})
    emit({"after_flood": {"value": (await peer.read_value(long)).hex()}})


async def eatt(connection, peer: Peer) -> None:
    emit({"mtu": await peer.request_mtu(64)})
    found = await discover(peer)
    long, level = found[LONG], found[BATTERY_LEVEL]
    bearers = [await gatt_client.Client.connect_eatt(connection, l2cap.LeCreditBasedChannelSpec(psm=att.EATT_PSM, mtu=mtu, mps=mtu))
               for mtu in (80, 160)]
    emit({"eatt": {"bearers": len(bearers)}})
    # One Read Request on each bearer, all in flight at once (each bearer has its own
    # transaction, Vol 3, Part G, 5.3.2); the answers as received.
    clients = [peer.gatt_client] + bearers
    answers = await asyncio.gather(*(c.send_request(att.ATT_Read_Request(attribute_handle=long.handle)) for c in clients))
    emit({"eatt_reads": [bytes(a).hex() for a in answers]})
    notified: asyncio.Future = asyncio.get_running_loop().create_future()
    peer.gatt_client.notification_subscribers.setdefault(level.handle, set()).add(
        lambda v: notified.done() or notified.set_result(bytes(v)))
    # The CCCD follows the value (Vol 3, Part G, 3.3.3.3): notifications on.
    written = await bearers[0].send_request(att.ATT_Write_Request(attribute_handle=level.handle + 1, attribute_value=bytes([1, 0])))
    emit({"eatt_subscribed": bytes(written).hex()})
    emit({"eatt_notification": {"handle": level.handle, "value": (await notified).hex()}})


async def serve(device: Device, connection, peer: Peer, reconnect):  # type: ignore[no-untyped-def]
    emit({"mtu": await peer.request_mtu(64)})
    found = await discover(peer)
    long, command, level = found[LONG], found[COMMAND], found[BATTERY_LEVEL]
    emit({"read": {"uuid": str(BATTERY_LEVEL), "value": (await peer.read_value(level)).hex()}})
    await peer.write_value(long, b"written by bumble", with_response=True)
    await peer.write_value(command, b"cmd", with_response=False)
    notified: asyncio.Future = asyncio.get_running_loop().create_future()
    await peer.subscribe(level, lambda v: notified.done() or notified.set_result(bytes(v)), prefer_notify=True)
    emit({"subscribed": True})
    emit({"notification": {"handle": level.handle, "value": (await notified).hex()}})
    connection, peer = await reconnect(connection)
    found = await discover(peer)
    emit({"read_again": {"value": (await peer.read_value(found[LONG])).hex()}})
    return connection


async def run(args: argparse.Namespace) -> int:
    loop = asyncio.get_running_loop()
    stop = stop_on_signals(loop)
    loop.call_later(args.lifetime, stop.set)

    link = LocalLink()
    host_side = await host_controller(link, 0, args.host_address)
    device = central_device(link, args.central_address)
    await device.power_on()

    target = hci.Address(args.host_address, hci.Address.PUBLIC_DEVICE_ADDRESS)
    advertised = asyncio.Event()

    def on_advertisement(advertisement) -> None:  # type: ignore[no-untyped-def]
        if advertisement.address.to_string(False) == target.to_string(False) and advertisement.is_connectable:
            if not advertised.is_set():
                emit({"advertisement": {"data": bytes(advertisement.data_bytes).hex()}})
            advertised.set()

    device.on("advertisement", on_advertisement)
    await device.start_scanning(legacy=False, active=False, filter_duplicates=False)
    emit({"ready": True, "port": host_side.port})

    async def connect():  # type: ignore[no-untyped-def]
        await advertised.wait()
        connection = await device.connect(target, own_address_type=hci.OwnAddressType.RANDOM)
        emit({"connected": {"handle": connection.handle}})
        return connection, Peer(connection)

    async def disconnect(connection) -> None:  # type: ignore[no-untyped-def]
        gone = asyncio.Event()
        connection.on("disconnection", lambda reason: gone.set())
        advertised.clear()
        await connection.disconnect()
        await gone.wait()
        emit({"disconnected": True})

    async def reconnect(connection):  # type: ignore[no-untyped-def]
        await disconnect(connection)
        return await connect()

    async def scenario() -> None:
        connection, peer = await connect()
        if args.scenario == "procedures":
            await procedures(device, connection, peer)
            await disconnect(connection)
            await advertised.wait()
        elif args.scenario == "eatt":
            await eatt(connection, peer)
            await disconnect(connection)
        else:
            await disconnect(await serve(device, connection, peer, reconnect))
        emit({"done": True})

    task = asyncio.ensure_future(scenario())
    waiter = asyncio.ensure_future(stop.wait())
    await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
    if task.done() and task.exception() is not None:
        emit({"error": repr(task.exception())})
    await stop.wait()
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host-address", default="00:1B:DC:0F:00:0A")
    parser.add_argument("--central-address", default="C0:00:00:00:00:02")
    parser.add_argument("--scenario", choices=["procedures", "eatt", "serve"], default="procedures")
    parser.add_argument("--lifetime", type=float, default=90, help="seconds before the script ends by itself")
    sys.exit(asyncio.run(run(parser.parse_args())))


if __name__ == "__main__":
    main()
