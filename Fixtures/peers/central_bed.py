"""The set-up the Bumble scripts that face the stack under test share (central_peer.py,
gatt_central.py, pairing_central.py and virtual_radio.py): JSON lines on stdout, an end on
SIGTERM or SIGINT, tasks held while they run, and a LocalLink on which one virtual
controller is exposed to the stack as H4 over TCP and another carries a Bumble Device as the
central.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import socket
import sys
from dataclasses import dataclass
from typing import Any, Coroutine

from bumble import hci
from bumble.controller import Controller
from bumble.device import Device, DeviceConfiguration
from bumble.host import Host
from bumble.link import LocalLink
from bumble.transport.common import AsyncPipeSink
from bumble.transport.tcp_server import open_tcp_server_transport_with_socket


def emit(obj: dict) -> None:
    """One JSON object as one line on stdout, flushed at once (the test reads it as it comes)."""
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def stop_on_signals(loop: asyncio.AbstractEventLoop) -> asyncio.Event:
    """An event set by SIGTERM or SIGINT. A parent may start us with those signals blocked
    (posix_spawn passes its mask on): they are unblocked first."""
    stop = asyncio.Event()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


# Every task spawn() started that has not ended yet.
_running: set[asyncio.Task] = set()


def spawn(coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task:
    """Runs `coroutine` as a task held here until it ends. The event loop keeps only weak
    references to tasks: a task nothing else holds, waiting on a future that only its own
    frame holds (a StreamReader's, whose protocol holds the reader weakly), is garbage to the
    cycle collector and is destroyed pending whenever a collection runs ("Task was destroyed
    but it is pending!"), so the work it had left is silently lost.

        spawn(connection.pair())
    """
    task = asyncio.ensure_future(coroutine)
    _running.add(task)
    task.add_done_callback(_running.discard)
    return task


@dataclass
class HostSide:
    """The controller the stack drives, the port it listens on, and its TCP transport, which
    the caller keeps for as long as the link runs: once collected, its server goes."""
    controller: Controller
    port: int
    transport: Any


async def host_controller(link: LocalLink, port: int, host_address: str) -> HostSide:
    """The controller the stack drives, as H4 over TCP on 127.0.0.1:`port` (0: any free port),
    with `host_address` as its public address."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    bound = sock.getsockname()[1]
    transport = await open_tcp_server_transport_with_socket(sock)
    controller = Controller(
        "host", host_source=transport.source, host_sink=transport.sink, link=link,
        public_address=host_address,
    )
    # Bumble's LocalLink labels ACL data with the sender's *random* address whatever own
    # address type the host connected with; a host that connects with its public address
    # would see its data dropped ("no connection for 00:00:00:00:00:00"). The same value as
    # its random address makes both kinds route.
    controller.random_address = controller.public_address
    return HostSide(controller, bound, transport)


def central_device(link: LocalLink, address: str, irk: bytes | None = None) -> Device:
    """A Bumble Device named "bumble-central" on a controller of its own on `link`, with the
    random static `address` (and `irk`, octets as Bumble keeps them); not yet powered on."""
    controller = Controller("central", link=link)
    config = DeviceConfiguration()
    config.name = "bumble-central"
    config.address = hci.Address(address, hci.Address.RANDOM_DEVICE_ADDRESS)
    if irk is not None:
        config.irk = irk
    return Device(config=config, host=Host(controller, AsyncPipeSink(controller)))


def bed_arguments(parser: argparse.ArgumentParser, host_address: str, central_address: str) -> None:
    """--port (0: any free port), --host-address (the public address of the controller the
    stack drives) and --central-address (the Bumble central's random static address)."""
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host-address", default=host_address)
    parser.add_argument("--central-address", default=central_address)
