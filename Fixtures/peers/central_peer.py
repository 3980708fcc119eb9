#!/usr/bin/env python3
"""Bumble as the central that scans for and connects to the stack under test.

Two Bumble virtual controllers on one LocalLink: one is exposed as H4 over TCP to the stack
(with --host-address as its public address), the other carries a Bumble Device that scans
with extended scanning and, with --connect, connects to the stack's advertisement.

stdout, one JSON object a line:
    {"ready": true, "port": 40123}
    {"advertisement": {"address": "...", "data": "0201..", "connectable": true, "legacy": false}}
    {"connected": {"handle": 1}}            (with --connect, at the first connectable advertisement)
    {"disconnected": {"reason": 19}}        (after --hold seconds, Bumble ends the link)
Each distinct advertising data of the host's address is printed once, and again after a
disconnect (so a test sees advertising resume). The script ends on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from bumble import hci
from bumble.link import LocalLink

from central_bed import bed_arguments, central_device, emit, host_controller, spawn, stop_on_signals


async def run(args: argparse.Namespace) -> int:
    loop = asyncio.get_running_loop()
    stop = stop_on_signals(loop)

    link = LocalLink()
    host_side = await host_controller(link, args.port, args.host_address)
    host = host_side.controller
    if args.extended_commands:
        # Bumble's controller has the LE Extended Advertising feature and handles the
        # extended advertising and scanning commands, but leaves them out of its Supported
        # Commands (so a host that checks them uses the legacy ones): list them.
        host.supported_commands = set(host.supported_commands) | {
            0x2035, 0x2036, 0x2037, 0x2038, 0x2039, 0x203A, 0x203B, 0x203C, 0x2041, 0x2042, 0x2043}

    device = central_device(link, args.central_address)
    await device.power_on()

    target = hci.Address(args.host_address, hci.Address.PUBLIC_DEVICE_ADDRESS)
    seen: set[bytes] = set()
    state = {"connecting": False, "done": False}

    async def connect_and_hold() -> None:
        connection = await device.connect(target, own_address_type=hci.OwnAddressType.RANDOM)
        emit({"connected": {"handle": connection.handle}})
        disconnected = asyncio.Event()

        def on_disconnection(reason: int) -> None:
            emit({"disconnected": {"reason": reason}})
            seen.clear()
            disconnected.set()

        connection.on("disconnection", on_disconnection)
        await asyncio.sleep(args.hold)
        if not disconnected.is_set():
            await connection.disconnect()
        await disconnected.wait()
        state["done"] = True

    def on_advertisement(advertisement) -> None:  # type: ignore[no-untyped-def]
        if advertisement.address.to_string(False) != target.to_string(False):
            return
        data = bytes(advertisement.data_bytes)
        if data not in seen:
            seen.add(data)
            emit({"advertisement": {
                "address": advertisement.address.to_string(False),
                "data": data.hex(),
                "connectable": bool(advertisement.is_connectable),
                "legacy": bool(advertisement.is_legacy),
            }})
        if args.connect and advertisement.is_connectable and not state["connecting"]:
            state["connecting"] = True
            spawn(connect_and_hold())

    device.on("advertisement", on_advertisement)
    await device.start_scanning(legacy=False, active=False, filter_duplicates=False)

    emit({"ready": True, "port": host_side.port})
    await stop.wait()
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bed_arguments(parser, host_address="00:1B:DC:0F:00:09", central_address="C0:00:00:00:00:01")
    parser.add_argument("--connect", action="store_true")
    parser.add_argument("--hold", type=float, default=0.5)
    parser.add_argument("--extended-commands", action="store_true")
    sys.exit(asyncio.run(run(parser.parse_args())))


if __name__ == "__main__":
    main()
