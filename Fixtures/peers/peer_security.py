"""What a simulated peripheral saw of the central's security, and the keys it answers
encryption with.

- A security log per device, one line per event, served by a characteristic with
  `"securityLog": true` (UTF-8, lines joined by "\\n"), so a test reads what the peer saw:
    `pairing request 01 04 00 2d 10 00 0f: PASSKEY` (the central's Pairing Request, Vol 3,
        Part H, 3.5.1, as it arrived, and the method Bumble chose from it, 2.3.5.1),
    `paired: Secure Connections, bonded` (or `legacy`, `not bonded`),
    `pairing failed 0x03` (the SMP reason, either side's, 3.5.5),
    `encrypted by pairing`, `encrypted with a stored key` (no pairing on that link),
    `encryption failed 0x06`.
- The LTK of an encryption with a stored bond (Vol 6, Part B, 5.1.3.1; Vol 4, Part E,
  7.7.65.5): looked up by EDIV and Rand. Bumble's own lookup hands a legacy responder the key
  the central distributed (often none) and uses EDIV = Rand = 0 for the key it distributes;
  here the peripheral gives its legacy LTK a random EDIV and Rand and answers only a request
  that carries them.
- `"storedBond"` in a device's pairing: a bond the device holds from the start, as if made
  before (for a bond a central imports from elsewhere): `{"central": "00:00:5E:00:53:01",
  "ltk": "32 hex digits, most significant first", "ediv": N, "rand": N, "authenticated": bool}`.
  EDIV and Rand 0 stand for a Secure Connections key (2.4.4.1).
- The helpers the peer scripts share for keys: `scenario_key` (a key as a scenario writes it)
  and `signature_mac` (the MAC of a Signed Write Command, 2.4.5).
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from bumble import att, hci, smp
from bumble.crypto import aes_cmac
from bumble.device import Connection, Device
from bumble.keys import PairingKeys

from central_bed import spawn

log = logging.getLogger("virtual_radio")


class ScenarioKeyError(ValueError):
    """A malformed key or "storedBond" in a scenario; the message names the device and field."""


def scenario_key(text: Any, where: str) -> bytes:
    """A 128-bit key as the specification prints keys (32 hex digits, most significant octet
    first, spaces allowed), in the order Bumble keeps it (least significant octet first).

        config.irk = scenario_key(raw["irk"], "device hrm: 'irk'")
    """
    digits = text.replace(" ", "") if isinstance(text, str) else ""
    try:
        key = bytes.fromhex(digits)
    except ValueError:
        key = b""
    if len(key) != 16:
        raise ScenarioKeyError(f"{where} must be 32 hex digits, not {text!r}")
    return key[::-1]


def signature_mac(message: bytes, csrk: bytes) -> bytes:
    """The MAC that ends a Signed Write Command (Vol 3, Part H, 2.4.5): the 64 most
    significant bits of AES-CMAC with the CSRK over `message` (opcode, handle, value and
    SignCounter, as on the air), least significant octet first as on the air. `csrk` is in
    Bumble's order (least significant octet first); the CMAC takes both most significant first.

        valid = signature_mac(pdu[:-8], csrk) == pdu[-8:]
    """
    return aes_cmac(message[::-1], csrk[::-1])[:8][::-1]


class BondKeepingSession(smp.Session):
    """A pairing session whose keys the peripheral keeps once the central's last key has
    arrived, also when the link ends right behind it: a Security Manager has the bond when
    key distribution ends (Vol 3, Part H, 3.6.1). Bumble stores the keys in a task that it
    cancels when the link ends; a central whose HCI Disconnect follows its last key
    distribution PDU at once (both in one read of the H4 stream, as on a loaded machine)
    left the peripheral without the bond, and the next link's encryption failed with PIN or
    Key Missing (0x06)."""

    def on_peer_key_distribution_complete(self) -> None:
        if self.is_initiator:
            self.distribute_keys()
        spawn(self.on_pairing()).add_done_callback(self.stored)

    @staticmethod
    def stored(task: asyncio.Task) -> None:
        # After a link that ended, waiting for its packets to drain fails once the keys
        # are stored: nothing to report.
        if not task.cancelled() and task.exception() is not None:
            log.info("pairing ended after its link: %s", task.exception())


class PeerSecurity:
    def __init__(self, device: Device, device_id: str) -> None:
        self.device = device
        self.device_id = device_id
        self.lines: list[str] = []
        self.stored_bond: dict[str, Any] | None = None

    def record(self, line: str) -> None:
        log.info("%s: security: %s", self.device_id, line)
        self.lines.append(line)

    def log_value(self) -> att.AttributeValue:
        return att.AttributeValue(read=lambda connection: "\n".join(self.lines).encode())

    # -- events ----------------------------------------------------------------------

    def watch(self, connection: Connection) -> None:
        """Records the link's pairing and encryption events; gives a legacy LTK this
        peripheral distributes a random EDIV and Rand."""
        connection.on(connection.EVENT_PAIRING_START, lambda: self.on_pairing_start(connection))
        connection.on(connection.EVENT_PAIRING, lambda keys: self.on_pairing(connection))
        connection.on(connection.EVENT_PAIRING_FAILURE, lambda reason: self.record(f"pairing failed 0x{int(reason):02X}"))
        connection.on(connection.EVENT_CONNECTION_ENCRYPTION_FAILURE,
                      lambda error: self.record(f"encryption failed 0x{getattr(error, 'error_code', 0):02X}"))

    def session(self, connection: Connection) -> Any:
        return self.device.smp_manager.sessions.get(connection.handle)

    def on_pairing_start(self, connection: Connection) -> None:
        session = self.session(connection)
        if session is None or session.preq is None:
            return
        self.record(f"pairing request {bytes(session.preq).hex(' ')}: {session.pairing_method.name}")

    def on_pairing(self, connection: Connection) -> None:
        session = self.session(connection)
        if session is None:
            return
        self.record(f"paired: {'Secure Connections' if session.sc else 'legacy'}, {'bonded' if session.bonding else 'not bonded'}")

    def on_encryption_change(self, connection: Connection) -> None:
        """Called before the SMP session's own handler, which distributes the keys: a legacy
        LTK gets its EDIV and Rand here (after the STK encryption, which uses zeros, 2.4.4.1)."""
        if not connection.encryption:
            return
        session = self.session(connection)
        if session is None:
            self.record("encrypted with a stored key")
            return
        self.record("encrypted by pairing")
        if not session.sc:
            session.ltk_ediv = int.from_bytes(os.urandom(2), "little")
            session.ltk_rand = os.urandom(8)

    # -- keys ------------------------------------------------------------------------

    def parse_stored_bond(self, rule: Any) -> None:
        if rule is None:
            return
        if not isinstance(rule, dict) or not isinstance(rule.get("central"), str) or not isinstance(rule.get("ltk"), str):
            raise ScenarioKeyError(f"device {self.device_id}: 'storedBond' needs \"central\" and \"ltk\"")
        scenario_key(rule["ltk"], f"device {self.device_id}: 'storedBond' ltk")
        self.stored_bond = rule

    async def load_stored_bond(self) -> None:
        """Puts the "storedBond" into the keystore (once powered on, when there is one), under
        both address types of the central: the radio gives its host-facing controller one
        value for both."""
        rule = self.stored_bond
        if rule is None or self.device.keystore is None:
            return
        ediv = int(rule.get("ediv", 0))
        rand = int(rule.get("rand", 0)).to_bytes(8, "little")
        key = PairingKeys.Key(value=scenario_key(rule["ltk"], f"device {self.device_id}: 'storedBond' ltk"),
                              authenticated=bool(rule.get("authenticated", False)), ediv=ediv, rand=rand)
        for kind in (hci.Address.PUBLIC_DEVICE_ADDRESS, hci.Address.RANDOM_DEVICE_ADDRESS):
            address = hci.Address(rule["central"], kind)
            keys = PairingKeys(address_type=kind)
            if ediv == 0 and rand == bytes(8):
                keys.ltk = key
            else:
                keys.ltk_central = key
            await self.device.keystore.update(str(address), keys)

    def install_key_lookup(self) -> None:
        device = self.device

        async def long_term_key(handle: int, rand: bytes, ediv: int) -> bytes | None:
            connection = device.lookup_connection(handle)
            if connection is None:
                return None
            during_pairing = device.smp_manager.get_long_term_key(connection, rand, ediv)
            if during_pairing is not None:
                return during_pairing
            keys = await device.keystore.get(str(connection.peer_address)) if device.keystore else None
            # ltk: a Secure Connections key (EDIV and Rand zero); ltk_central: in Bumble's
            # naming, the legacy key this responder distributed.
            for key in (keys.ltk, keys.ltk_central) if keys else ():
                if key and key.value and (key.ediv or 0) == ediv and (key.rand or bytes(8)) == bytes(rand):
                    return key.value
            log.info("%s: no key for EDIV 0x%04X Rand %s from %s", self.device_id, ediv, bytes(rand).hex(),
                     connection.peer_address)
            return None

        device.host.long_term_key_provider = long_term_key
