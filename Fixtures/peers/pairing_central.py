#!/usr/bin/env python3
"""Bumble as the central that pairs with the stack under test (the stack is the peripheral
and answers as the SMP responder).

Two Bumble virtual controllers on one LocalLink, as in central_peer.py: one exposed as H4 over
TCP to the stack (with --host-address as its public address), the other carrying a Bumble
Device that connects to the stack's first connectable advertisement and then does what the
test writes on stdin, one JSON object a line:
    {"pair": {}}                          pair (Bumble's Security Manager as the initiator)
    {"pair": {"oob": {"r": hex, "c": hex}}}   the same with the stack's LE SC OOB data
                                          (16 octets each, least significant first)
    {"passkey": 123456}                   the passkey Bumble's delegate is asked for
    {"reconnect": {}}                     disconnect and connect again (connect only when the
                                          stack ended the link, as when it restarted)
    {"resolve": {}}                       disconnect, then connect to the first connectable
                                          advertisement whose address resolves with an IRK
                                          the stack gave in pairing
    {"encrypt": {}}                       encrypt with the stored keys (LE Enable Encryption)
    {"read": "UUID"}                      read a characteristic with Bumble's GATT client
                                          (services discovered on the link's first use)
    {"subscribe": "UUID"}                 write its CCCD for notifications
    {"listen": "UUID"}                    take its notifications on this link without writing
                                          the CCCD (the handle of the link that discovered it)
    {"signedWrite": {"uuid": "UUID", "value": hex, "counter": n}}
                                          send a Signed Write Command (Vol 3, Part F, 3.4.5.4)
                                          as raw ATT octets, signed with the CSRK this side
                                          distributed and SignCounter n (Vol 3, Part H, 2.4.5)
stdout, one JSON object a line:
    {"ready": true, "port": 40123}
    {"connected": {"handle": 1, "address": "AA:...:FF/P"}}   the address connected to
    {"resolved": {"address": "4A:...", "identity": "AA:..."}}  an advertiser resolved by its IRK
    {"securityRequest": {"authReq": 13}}  a Security Request from the stack (3.5.7)
    {"display": 123456} / {"compare": 123456} / {"passkeyRequest": {}}   the delegate's calls
    {"paired": {"sc": true, "ltk": hex|null, "ltkCentral": {"ltk": hex, "ediv": n, "rand": hex}|null,
                "irk": hex|null, "identity": "AA:..."|null}}   keys Bumble keeps (hex as on the air)
    {"pairingFailed": {"reason": 5}}
    {"encrypted": {}} / {"encryptionFailed": {"error": 6}}
    {"read": {"uuid": "...", "value": hex}} / {"readFailed": {"uuid": "...", "error": 15}}
    {"subscribed": {"uuid": "..."}} / {"listening": {"uuid": "..."}}
    {"signedWrite": {"uuid": "...", "pdu": hex}}   the PDU sent (no response comes: a command)
    {"notification": {"uuid": "...", "value": hex}}
The pairing options come from the command line (--io, --legacy, --mitm, --no-bonding,
--irk). With --any-advertiser the device connects to the first connectable advertiser
whatever its address (a stack advertising from a random address), else to --host-address.
The script ends on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from bumble import hci, smp
from bumble.att import ATT_Error
from bumble.core import UUID
from bumble.device import Peer
from bumble.keys import MemoryKeyStore
from bumble.link import LocalLink
from bumble.pairing import PairingConfig, PairingDelegate

from central_bed import bed_arguments, central_device, emit, host_controller, spawn, stop_on_signals
from peer_security import signature_mac

IO = {
    "none": PairingDelegate.NO_OUTPUT_NO_INPUT,
    "display": PairingDelegate.DISPLAY_OUTPUT_ONLY,
    "keyboard": PairingDelegate.KEYBOARD_INPUT_ONLY,
    "yesno": PairingDelegate.DISPLAY_OUTPUT_AND_YES_NO_INPUT,
    "keyboarddisplay": PairingDelegate.DISPLAY_OUTPUT_AND_KEYBOARD_INPUT,
}


class Delegate(PairingDelegate):
    """Reports each call; a passkey to type comes from stdin."""

    def __init__(self, io: int, passkeys: asyncio.Queue) -> None:
        dist = (PairingDelegate.KeyDistribution.DISTRIBUTE_ENCRYPTION_KEY
                | PairingDelegate.KeyDistribution.DISTRIBUTE_IDENTITY_KEY
                | PairingDelegate.KeyDistribution.DISTRIBUTE_SIGNING_KEY)
        super().__init__(io_capability=io, local_initiator_key_distribution=dist, local_responder_key_distribution=dist)
        self.passkeys = passkeys

    async def accept(self) -> bool:
        return True

    async def confirm(self, auto: bool = False) -> bool:
        return True

    async def compare_numbers(self, number: int, digits: int) -> bool:
        emit({"compare": number})
        return True

    async def get_number(self) -> int | None:
        emit({"passkeyRequest": {}})
        return await self.passkeys.get()

    async def display_number(self, number: int, digits: int) -> None:
        emit({"display": number})


# The CSRK Bumble's Security Manager distributes with the Signing Information command
# (bumble/smp.py sends 16 zero octets).
LOCAL_CSRK = bytes(16)
ATT_CID = 0x0004


def signature(message: bytes, counter: int, csrk: bytes) -> bytes:
    """The 12 octets after a Signed Write Command's value (Vol 3, Part H, 2.4.5): SignCounter,
    then the MAC over m || SignCounter."""
    count = counter.to_bytes(4, "little")
    return count + signature_mac(message + count, csrk)


def key_hex(key) -> str | None:  # type: ignore[no-untyped-def]
    return bytes(key.value).hex() if key is not None and key.value else None


async def run(args: argparse.Namespace) -> int:
    loop = asyncio.get_running_loop()
    stop = stop_on_signals(loop)

    link = LocalLink()
    host_side = await host_controller(link, args.port, args.host_address)
    host = host_side.controller
    port = host_side.port
    # An extended advertising set's random address is the one its links send from: the link
    # routes by the controller's random address, so it follows the set's.
    set_random = host.on_hci_le_set_advertising_set_random_address_command

    def on_set_random(command):  # type: ignore[no-untyped-def]
        host.random_address = command.random_address
        return set_random(command)

    host.on_hci_le_set_advertising_set_random_address_command = on_set_random

    device = central_device(link, args.central_address, irk=bytes.fromhex(args.irk))
    device.keystore = MemoryKeyStore()
    await device.power_on()

    passkeys: asyncio.Queue = asyncio.Queue()
    delegate = Delegate(IO[args.io], passkeys)
    oob: dict = {}

    def pairing_config(_connection) -> PairingConfig:  # type: ignore[no-untyped-def]
        oob_config = None
        if "r" in oob:
            shared = smp.OobSharedData(c=bytes.fromhex(oob["c"]), r=bytes.fromhex(oob["r"]))
            oob_config = PairingConfig.OobConfig(our_context=smp.OobContext(), peer_data=shared, legacy_context=None)
        return PairingConfig(sc=not args.legacy, mitm=args.mitm, bonding=not args.no_bonding,
                             delegate=delegate, oob=oob_config)

    device.pairing_config_factory = pairing_config

    target = hci.Address(args.host_address, hci.Address.PUBLIC_DEVICE_ADDRESS)
    state: dict = {"connecting": False, "connection": None, "target": target, "resolving": False}
    connected = asyncio.Event()

    def on_disconnection(reason) -> None:  # type: ignore[no-untyped-def]
        state["down"] = True
        emit({"disconnected": {"reason": reason}})

    async def connect() -> None:
        connection = await device.connect(state["target"], own_address_type=hci.OwnAddressType.RANDOM)
        state["connection"] = connection
        state["down"] = False
        connection.on("security_request", lambda auth_req: emit({"securityRequest": {"authReq": int(auth_req)}}))
        connection.on("disconnection", on_disconnection)
        emit({"connected": {"handle": connection.handle, "address": str(state["target"])}})
        connected.set()

    def on_advertisement(advertisement) -> None:  # type: ignore[no-untyped-def]
        if not advertisement.is_connectable:
            return
        if state["resolving"]:
            resolver = device.address_resolver
            identity = resolver.resolve(advertisement.address) if resolver is not None and advertisement.address.is_resolvable else None
            if identity is None:
                return
            state["resolving"] = False
            state["target"] = advertisement.address
            emit({"resolved": {"address": advertisement.address.to_string(False), "identity": identity.to_string(False)}})
            spawn(connect())
            return
        if args.any_advertiser:
            if advertisement.address.to_string(False) == device.random_address.to_string(False):
                return
        elif advertisement.address.to_string(False) != target.to_string(False):
            return
        if not state["connecting"]:
            state["connecting"] = True
            state["target"] = advertisement.address
            spawn(connect())

    device.on("advertisement", on_advertisement)
    await device.start_scanning(legacy=False, active=False, filter_duplicates=False)

    async def pair(command: dict) -> None:
        oob.clear()
        oob.update(command.get("oob") or {})
        connection = state["connection"]
        try:
            await connection.pair()
        except Exception as error:  # noqa: BLE001 - reported to the test
            emit({"pairingFailed": {"reason": int(getattr(error, "error_code", -1) or -1), "error": str(error)}})
            return
        identity = str(connection.peer_address)
        keys = await device.keystore.get(identity)
        if keys is None:
            # Kept under the identity address the stack distributed, not the one connected to.
            for name, stored in await device.keystore.get_all():
                identity, keys = name, stored
        central = keys.ltk_central if keys else None
        emit({"paired": {
            "identity": identity if keys else None,
            "sc": bool(keys and keys.ltk),
            "ltk": key_hex(keys.ltk) if keys else None,
            "ltkCentral": {"ltk": key_hex(central), "ediv": central.ediv or 0, "rand": bytes(central.rand or bytes(8)).hex()}
            if central is not None and central.value else None,
            "irk": key_hex(keys.irk) if keys else None,
        }})

    async def reconnect() -> None:
        connection = state["connection"]
        if not state.get("down"):
            await connection.disconnect()
        await device.stop_scanning()
        await connect()

    async def resolve() -> None:
        await state["connection"].disconnect()
        await device.refresh_resolving_list()
        state["resolving"] = True
        if not device.scanning:
            await device.start_scanning(legacy=False, active=False, filter_duplicates=False)

    async def encrypt() -> None:
        connection = state["connection"]
        try:
            await connection.encrypt()
        except Exception as error:  # noqa: BLE001 - reported to the test
            emit({"encryptionFailed": {"error": int(getattr(error, "error_code", -1) or -1), "detail": str(error)}})
            return
        emit({"encrypted": {}})

    handles: dict = {}

    async def characteristic(uuid: str):  # type: ignore[no-untyped-def]
        peer = state.get("peer")
        if peer is None or peer.connection is not state["connection"]:
            peer = Peer(state["connection"])
            state["peer"] = peer
            await peer.discover_services()
            for service in peer.services:
                await service.discover_characteristics()
        found = peer.get_characteristics_by_uuid(UUID(uuid))
        if found:
            handles[uuid.upper()] = found[0].handle
        return found[0] if found else None

    def notified(uuid: str):  # type: ignore[no-untyped-def]
        return lambda value: emit({"notification": {"uuid": uuid, "value": bytes(value).hex()}})

    async def read(uuid: str) -> None:
        c = await characteristic(uuid)
        try:
            emit({"read": {"uuid": uuid, "value": bytes(await c.read_value()).hex()}})
        except ATT_Error as error:
            emit({"readFailed": {"uuid": uuid, "error": int(error.error_code)}})

    async def subscribe(uuid: str) -> None:
        c = await characteristic(uuid)
        await c.subscribe(notified(uuid), prefer_notify=True)
        emit({"subscribed": {"uuid": uuid}})

    async def signed_write(command: dict) -> None:
        c = await characteristic(command["uuid"])
        # Opcode 0xD2, the value handle, the value (Vol 3, Part F, 3.4.5.4).
        message = bytes([0xD2]) + c.handle.to_bytes(2, "little") + bytes.fromhex(command["value"])
        pdu = message + signature(message, int(command["counter"]), LOCAL_CSRK)
        state["connection"].send_l2cap_pdu(ATT_CID, pdu)
        emit({"signedWrite": {"uuid": command["uuid"], "pdu": pdu.hex()}})

    def listen(uuid: str) -> None:
        subscribers = state["connection"].gatt_client.notification_subscribers
        subscribers.setdefault(handles[uuid.upper()], set()).add(notified(uuid))
        emit({"listening": {"uuid": uuid}})

    async def commands() -> None:
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while line := await reader.readline():
            command = json.loads(line)
            await connected.wait()
            if "pair" in command:
                spawn(pair(command["pair"]))
            elif "passkey" in command:
                passkeys.put_nowait(int(command["passkey"]))
            elif "reconnect" in command:
                # Later commands wait for the new link.
                connected.clear()
                spawn(reconnect())
            elif "resolve" in command:
                connected.clear()
                spawn(resolve())
            elif "encrypt" in command:
                spawn(encrypt())
            elif "read" in command:
                spawn(read(command["read"]))
            elif "subscribe" in command:
                spawn(subscribe(command["subscribe"]))
            elif "signedWrite" in command:
                spawn(signed_write(command["signedWrite"]))
            elif "listen" in command:
                listen(command["listen"])

    spawn(commands())
    emit({"ready": True, "port": port})
    await stop.wait()
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bed_arguments(parser, host_address="00:1B:DC:0F:00:0A", central_address="C0:00:00:00:00:02")
    parser.add_argument("--io", choices=sorted(IO), default="none")
    parser.add_argument("--legacy", action="store_true")
    parser.add_argument("--mitm", action="store_true")
    parser.add_argument("--no-bonding", action="store_true")
    parser.add_argument("--irk", default="00112233445566778899aabbccddeeff")
    parser.add_argument("--any-advertiser", action="store_true")
    sys.exit(asyncio.run(run(parser.parse_args())))


if __name__ == "__main__":
    main()
