"""LE credit-based channel servers for the virtual radio's peripherals (scenario key "l2cap").

Each entry of a device's "l2cap" list serves one LE_PSM (Core Spec 5.4 Vol 3, Part A, 10.1):

    {"psm": 128, "mtu": 2048, "mps": 247, "credits": 16, "grant": "window", "mode": "echo"}

- "mode": "echo" writes every SDU back; "sink" only counts.
- "grant": how the peer gives the central credits back. "window" tops them up to "credits"
  once half are used; "one" grants a single credit per K-frame taken (start with
  "credits": 1 for a peer that grants one credit at a time); "never" grants none beyond the
  initial ones (a peer that stops reading).
- "mode": "dial" (with "dial": {"psm": N, "count": 1-5, "mtu": ..., "mps": ..., "credits": ...})
  answers the central's first SDU on the channel by opening "count" enhanced credit-based
  channels back to the central's PSM N with one L2CAP_CREDIT_BASED_CONNECTION_REQ (Vol 3,
  Part A, 4.25). Each writes "ecfc <index>" once open and echoes what it receives; the dial
  channel then gets the SDU "opened <count>" or "failed <error>".
- "dropLink" ends the link (HCI Disconnect, reason 0x13) in the middle of an SDU:
  {"afterFrames": N} once the N-th K-frame of a channel arrived (with "grant": "never" and
  "credits": N, the central is then waiting for credits halfway through its SDU);
  {"sendFrames": N, "sduLength": L} once the channel's first SDU arrived, after sending the
  first N K-frames of an SDU of L bytes (byte i = i & 0xFF), so the central holds half an SDU.
- Every device also answers L2CAP_CREDIT_BASED_RECONFIGURE_REQ (4.27-4.28), which stock
  Bumble rejects as not understood: it checks the rules (MTU only grows, MPS shrinks for one
  channel only, CIDs its own enhanced channels, values of at least 64) and, on success,
  sends by the central's new MTU and MPS.
- "security": "encrypted" or "authenticated" refuses LE and enhanced Credit Based Connection
  Requests for the PSM on a link below that level (Vol 3, Part A, 4.23 and 4.26; Vol 3,
  Part C, 10.2.1), which stock Bumble cannot: result 0x0008 (insufficient encryption) on a
  plain link for "encrypted", 0x0005 (insufficient authentication) on a link without a
  MITM-protected key for "authenticated"; "refuseWith": N answers N instead. The device says
  what its links have (`security_of`).
- The receive side is strict, unlike stock Bumble: a K-frame longer than the MPS given to
  the central, a K-frame sent without a credit, an SDU Length over the MTU or K-frames that
  carry more than their SDU Length are protocol violations. The peer logs them ("L2CAP
  VIOLATION ...") and closes the channel with a Disconnection Request, so the central sees
  its channel closed.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from typing import Any, Awaitable, Callable

from bumble import hci, l2cap

from central_bed import spawn

log = logging.getLogger("virtual_radio.l2cap")

GRANTS = ("window", "one", "never")
LEVELS = ("none", "encrypted", "authenticated")
MODES = ("echo", "sink", "dial")


class L2capSpecError(Exception):
    """An "l2cap" scenario entry is not valid; the message names the device and field."""


def install(device: Any, entries: Any, where: str,
            security_of: Callable[[Any], Awaitable[str]] | None = None) -> None:
    """Registers one server per entry on `device`; `security_of(connection)` says the level
    of a link ("none", "encrypted" or "authenticated") for servers with "security"."""
    install_reconfigure(device)
    if not isinstance(entries, list):
        raise L2capSpecError(f"{where}: 'l2cap' must be a list of servers")
    required: dict[int, tuple[str, int | None]] = {}
    for index, entry in enumerate(entries):
        here = f"{where} l2cap[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("psm"), int):
            raise L2capSpecError(f"{here}: needs an integer 'psm'")
        grant = entry.get("grant", "window")
        mode = entry.get("mode", "echo")
        if grant not in GRANTS:
            raise L2capSpecError(f"{here}: 'grant' must be one of {GRANTS}")
        if mode not in MODES:
            raise L2capSpecError(f"{here}: 'mode' must be one of {MODES}")
        spec = l2cap.LeCreditBasedChannelSpec(
            psm=entry["psm"],
            mtu=int(entry.get("mtu", 2048)),
            mps=int(entry.get("mps", 247)),
            max_credits=int(entry.get("credits", 16)),
        )
        dial = entry.get("dial")
        if mode == "dial" and (not isinstance(dial, dict) or not isinstance(dial.get("psm"), int)
                               or not 1 <= int(dial.get("count", 1)) <= 5):
            raise L2capSpecError(f"{here}: mode 'dial' needs 'dial': {{'psm': N, 'count': 1-5}}")
        drop = entry.get("dropLink")
        if drop is not None and not (isinstance(drop, dict) and (
                isinstance(drop.get("afterFrames"), int)
                or (isinstance(drop.get("sendFrames"), int) and isinstance(drop.get("sduLength"), int)))):
            raise L2capSpecError(f"{here}: 'dropLink' needs {{'afterFrames': N}} or {{'sendFrames': N, 'sduLength': L}}")
        level = entry.get("security")
        if level is not None:
            refuse_with = entry.get("refuseWith")
            if level not in LEVELS[1:] or (refuse_with is not None and not isinstance(refuse_with, int)):
                raise L2capSpecError(f"{here}: 'security' must be one of {LEVELS[1:]}, 'refuseWith' an integer")
            if security_of is None:
                raise L2capSpecError(f"{here}: 'security' needs a device that tracks its links' security")
            required[entry["psm"]] = (level, refuse_with)
        server = StrictServer(entry["psm"], grant, mode, dial, drop)
        device.create_l2cap_server(spec=spec, handler=server.on_channel)
        log.info("%s: serving LE_PSM 0x%04X (%s, grant %s, MTU %d, MPS %d, %d credits, security %s)",
                 where, spec.psm, mode, grant, spec.mtu, spec.mps, spec.max_credits, level or "none")
    if required and security_of is not None:
        install_security(device, required, security_of)


def install_security(device: Any, required: dict[int, tuple[str, int | None]],
                     security_of: Callable[[Any], Awaitable[str]]) -> None:
    """Checks the link's level before Bumble handles a (LE or enhanced) Credit Based
    Connection Request for a PSM in `required`, and refuses it when the level is short."""
    manager = device.l2cap_channel_manager
    le_handler = manager.on_l2cap_le_credit_based_connection_request
    enhanced_handler = manager.on_l2cap_credit_based_connection_request

    async def refusal(connection: Any, psm: int) -> int | None:
        level, refuse_with = required[psm]
        have = await security_of(connection)
        if LEVELS.index(have) >= LEVELS.index(level):
            return None
        result = refuse_with if refuse_with is not None else (0x0008 if have == "none" and level == "encrypted" else 0x0005)
        log.info("PSM 0x%04X needs %s, the link is %s: refused with result 0x%04X", psm, level, have, result)
        return result

    def checked(handler: Callable[..., None], psm_of: Callable[[Any], int],
                response: Callable[[Any, int], Any]) -> Callable[[Any, int, Any], None]:
        def on_request(connection: Any, cid: int, request: Any) -> None:
            if psm_of(request) not in required:
                return handler(connection, cid, request)

            async def check() -> None:
                result = await refusal(connection, psm_of(request))
                if result is None:
                    return handler(connection, cid, request)
                manager.send_control_frame(connection, cid, response(request, result))
            spawn(check())
        return on_request

    on_le_request = checked(
        le_handler, lambda request: request.le_psm,
        lambda request, result: l2cap.L2CAP_LE_Credit_Based_Connection_Response(
            identifier=request.identifier, destination_cid=0, mtu=23, mps=23, initial_credits=0, result=result))
    on_enhanced_request = checked(
        enhanced_handler, lambda request: request.spsm,
        lambda request, result: l2cap.L2CAP_Credit_Based_Connection_Response(
            identifier=request.identifier, destination_cid=[0] * len(request.source_cid),
            mtu=64, mps=64, initial_credits=0, result=result))

    manager.on_l2cap_le_credit_based_connection_request = on_le_request
    manager.on_l2cap_credit_based_connection_request = on_enhanced_request


def install_reconfigure(device: Any) -> None:
    """Adds the Credit Based Reconfigure Request handler to the device's channel manager."""
    manager = device.l2cap_channel_manager

    def on_request(connection: Any, cid: int, request: Any) -> None:
        channels = manager.le_coc_channels.get(connection.handle, {}).values()
        by_destination = {c.destination_cid: c for c in channels}
        targets = [by_destination.get(d) for d in request.destination_cid]
        if any(t is None for t in targets):
            result = 0x0003
        elif request.mtu < 64 or not 64 <= request.mps <= 65533:
            result = 0x0004
        elif any(request.mtu < t.peer_mtu for t in targets):
            result = 0x0001
        elif len(targets) > 1 and any(request.mps < t.peer_mps for t in targets):
            result = 0x0002
        else:
            result = 0x0000
            for t in targets:
                t.peer_mtu = request.mtu
                t.peer_mps = request.mps
        log.info("reconfigure request MTU %d MPS %d CIDs %s: result 0x%04X",
                 request.mtu, request.mps, [f"0x{c:04X}" for c in request.destination_cid], result)
        manager.send_control_frame(connection, cid, l2cap.L2CAP_Credit_Based_Reconfigure_Response(
            identifier=request.identifier, result=result))

    manager.on_l2cap_credit_based_reconfigure_request = on_request


class StrictServer:
    def __init__(self, psm: int, grant: str, mode: str, dial: dict[str, Any] | None = None,
                 drop: dict[str, Any] | None = None, close_after_bytes: int | None = None) -> None:
        self.psm = psm
        self.grant = grant
        self.mode = mode
        self.dial = dial
        self.drop = drop or {}
        self.close_after_bytes = close_after_bytes

    def on_channel(self, channel: l2cap.LeCreditBasedChannel) -> None:
        StrictChannel(channel, self)


class StrictChannel:
    """Takes over the K-frame receive path of one Bumble channel (its sending stays Bumble's,
    which already waits for credits and segments by the central's MPS)."""

    def __init__(self, channel: l2cap.LeCreditBasedChannel, server: StrictServer) -> None:
        self.channel = channel
        self.server = server
        self.sdu: bytearray | None = None
        self.sdu_length = 0
        self.frames = 0
        self.sdus = 0
        self.bytes_received = 0
        self.closed = False
        channel.on_pdu = self.on_pdu  # type: ignore[method-assign]
        channel.sink = self.on_sdu
        log.info("PSM 0x%04X: channel open (CID 0x%04X -> 0x%04X, central MTU %d MPS %d, %d credits)",
                 server.psm, channel.source_cid, channel.destination_cid,
                 channel.peer_mtu, channel.peer_mps, channel.credits)

    def violation(self, what: str) -> None:
        log.error("L2CAP VIOLATION on PSM 0x%04X CID 0x%04X: %s", self.server.psm, self.channel.source_cid, what)
        if self.closed:
            return
        self.closed = True
        spawn(self.channel.disconnect())

    def give_credits(self, credits: int) -> None:
        channel = self.channel
        channel.peer_credits += credits
        channel.send_control_frame(
            l2cap.L2CAP_LE_Flow_Control_Credit(
                identifier=channel.manager.next_identifier(channel.connection),
                cid=channel.source_cid,
                credits=credits,
            )
        )

    def on_pdu(self, pdu: bytes) -> None:
        channel = self.channel
        if self.closed or channel.state != channel.State.CONNECTED:
            return
        self.frames += 1
        if len(pdu) > channel.mps:
            return self.violation(f"K-frame #{self.frames} of {len(pdu)} bytes over the MPS of {channel.mps}")
        if channel.peer_credits <= 0:
            return self.violation(f"K-frame #{self.frames} sent without a credit")
        channel.peer_credits -= 1
        if self.frames == self.server.drop.get("afterFrames"):
            self.drop_link(f"after K-frame #{self.frames}")
            return
        if self.server.grant == "one":
            self.give_credits(1)
        elif self.server.grant == "window" and channel.peer_credits <= channel.peer_max_credits // 2:
            self.give_credits(channel.peer_max_credits - channel.peer_credits)
        data = pdu
        if self.sdu is None:
            if len(pdu) < 2:
                return self.violation(f"first K-frame of {len(pdu)} bytes has no SDU Length")
            self.sdu_length = struct.unpack_from("<H", pdu, 0)[0]
            if self.sdu_length > channel.mtu:
                return self.violation(f"SDU Length {self.sdu_length} over the MTU of {channel.mtu}")
            self.sdu = bytearray()
            data = pdu[2:]
        self.sdu += data
        if len(self.sdu) > self.sdu_length:
            return self.violation(f"{len(self.sdu)} bytes for an SDU Length of {self.sdu_length}")
        if len(self.sdu) == self.sdu_length:
            sdu = bytes(self.sdu)
            self.sdu = None
            self.on_sdu(sdu)

    def drop_link(self, why: str) -> None:
        self.closed = True
        log.info("PSM 0x%04X: dropping the link %s", self.server.psm, why)
        spawn(self.channel.connection.disconnect(hci.HCI_REMOTE_USER_TERMINATED_CONNECTION_ERROR))

    def send_half_sdu(self, frames: int, length: int) -> None:
        """Sends the first `frames` K-frames of an SDU of `length` bytes (Vol 3, Part A, 3.4.3)."""
        channel = self.channel
        data = struct.pack("<H", length) + bytes(i & 0xFF for i in range(length))
        for index in range(frames):
            channel.send_pdu(data[index * channel.peer_mps:(index + 1) * channel.peer_mps])
            channel.credits -= 1

    def on_sdu(self, sdu: bytes) -> None:
        self.sdus += 1
        self.bytes_received += len(sdu)
        if "sendFrames" in self.server.drop and self.sdus == 1:
            self.send_half_sdu(int(self.server.drop["sendFrames"]), int(self.server.drop["sduLength"]))
            self.drop_link(f"after {self.server.drop['sendFrames']} K-frames of an SDU")
            return
        if self.server.mode == "echo":
            self.channel.write(sdu)
        limit = self.server.close_after_bytes
        if limit is not None and self.bytes_received >= limit and not self.closed:
            self.closed = True
            spawn(self.close_when_drained())
        elif self.server.mode == "dial" and self.sdus == 1:
            spawn(self.dial_back())

    async def close_when_drained(self) -> None:
        await self.channel.drain()
        log.info("PSM 0x%04X: closing the channel after %d bytes", self.server.psm, self.bytes_received)
        await self.channel.disconnect()

    async def dial_back(self) -> None:
        dial = self.server.dial or {}
        count = int(dial.get("count", 1))
        spec = l2cap.LeCreditBasedChannelSpec(
            psm=int(dial["psm"]), mtu=int(dial.get("mtu", 2048)), mps=int(dial.get("mps", 247)),
            max_credits=int(dial.get("credits", 16)))
        manager = self.channel.manager
        try:
            channels = await manager.create_enhanced_credit_based_channels(self.channel.connection, spec, count)
        except Exception as error:  # refused or timed out: tell the central
            log.info("PSM 0x%04X: enhanced channels to 0x%04X failed: %s", self.server.psm, spec.psm, error)
            self.channel.write(f"failed {error}".encode())
            return
        for index, channel in enumerate(channels):
            channel.sink = channel.write  # echo
            log.info("dialled enhanced channel %d: CID 0x%04X -> 0x%04X, central MTU %d MPS %d",
                     index, channel.source_cid, channel.destination_cid, channel.peer_mtu, channel.peer_mps)
            channel.write(f"ecfc {index}".encode())
        self.channel.write(f"opened {len(channels)}".encode())


def install_connector(device: Any, spec: Any, where: str) -> None:
    """Device key "l2capConnect": {"psm": N, "mtu", "mps", "credits", "send": ["text", ...],
    "closeAfterBytes": N, "pairWhenRefused": bool}. Once a link is made the device opens an LE
    credit-based channel (Vol 3, Part A, 4.22) to the central's LE_PSM N, asking again every
    100 ms (up to 10 s) while the central answers 0x0002 (it registers its server once the link
    is up). With "pairWhenRefused", a refusal for lack of security (0x0005, 0x0007, 0x0008,
    4.23) makes it send a Security Request (Vol 3, Part H, 3.6.7), wait (up to 30 s) until the
    central has encrypted the link, and ask once more; it logs each refusal ("channel to PSM
    0x0095 refused with result 0x0008"). It writes each "send" text as one SDU, echoes what
    it receives with the strict receive side above, and closes the channel once it has
    received "closeAfterBytes" bytes (never when absent)."""
    if spec is None:
        return
    if not isinstance(spec, dict) or not isinstance(spec.get("psm"), int):
        raise L2capSpecError(f"{where}: 'l2capConnect' needs an integer 'psm'")
    channel_spec = l2cap.LeCreditBasedChannelSpec(
        psm=spec["psm"], mtu=int(spec.get("mtu", 2048)), mps=int(spec.get("mps", 247)),
        max_credits=int(spec.get("credits", 16)))
    close_after = spec.get("closeAfterBytes")
    server = StrictServer(spec["psm"], "window", "echo", close_after_bytes=None if close_after is None else int(close_after))
    texts = [str(t) for t in spec.get("send", [])]
    pair_when_refused = bool(spec.get("pairWhenRefused", False))

    async def pair(connection: Any) -> bool:
        """Asks the central to raise security and waits until the link is encrypted."""
        encrypted = asyncio.get_running_loop().create_future()

        def on_change() -> None:
            if connection.encryption and not encrypted.done():
                encrypted.set_result(None)
        connection.on(connection.EVENT_CONNECTION_ENCRYPTION_CHANGE, on_change)
        device.request_pairing(connection)
        try:
            await asyncio.wait_for(encrypted, 30)
            return True
        except asyncio.TimeoutError:
            log.info("%s: the central did not encrypt the link within 30 s", where)
            return False
        finally:
            connection.remove_listener(connection.EVENT_CONNECTION_ENCRYPTION_CHANGE, on_change)

    async def connect(connection: Any) -> None:
        paired = False
        for _ in range(100):
            try:
                channel = await device.l2cap_channel_manager.create_le_credit_based_channel(connection, channel_spec)
                break
            except l2cap.L2capError as error:
                if error.error_code in (0x0005, 0x0007, 0x0008):
                    log.info("%s: channel to PSM 0x%04X refused with result 0x%04X", where, channel_spec.psm, error.error_code)
                    if pair_when_refused and not paired:
                        paired = await pair(connection)
                        if paired:
                            continue
                    return
                if error.error_code != 0x0002:
                    log.info("%s: channel to PSM 0x%04X refused: %s", where, channel_spec.psm, error)
                    return
            except Exception as error:  # the link went away
                log.info("%s: channel to PSM 0x%04X failed: %s", where, channel_spec.psm, error)
                return
            await asyncio.sleep(0.1)
        else:
            log.info("%s: the central never served PSM 0x%04X", where, channel_spec.psm)
            return
        log.info("%s: channel to PSM 0x%04X open (link %s)", where, channel_spec.psm, "encrypted" if connection.encryption else "not encrypted")
        StrictChannel(channel, server)
        for text in texts:
            channel.write(text.encode())

    device.on("connection", lambda connection: spawn(connect(connection)))
    log.info("%s: opens a channel to the central's LE_PSM 0x%04X on each link", where, channel_spec.psm)
