#!/usr/bin/env python3
"""Virtual LE radio for integration tests.

One Bumble virtual controller is exposed to an outside host stack as H4 over TCP;
simulated peripherals (Bumble devices, each with its own virtual controller) share the
same virtual link, advertise, accept connections and serve GATT databases described by a
JSON scenario file.

Usage:
    virtual_radio.py --scenario scenarios/heart-rate.json [--port 0] [--exit-on-stdin-eof]

Exactly one line is written to stdout, once everything is up:
    {"ready": true, "port": 40123, "devices": [{"id": ..., "name": ..., "address": ...,
     "addressType": "random"}]}
Everything else goes to stderr. SIGTERM, SIGINT (and stdin EOF with --exit-on-stdin-eof)
end the process with exit status 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import struct
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from bumble import att, hci, smp
from bumble.controller import Controller
from bumble.device import Connection, Device, DeviceConfiguration
from bumble.gatt import Characteristic, Descriptor, Service
from bumble.host import Host
from bumble.link import LocalLink
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.smp import OobContext, OobLegacyContext, OobSharedData
from bumble.profiles.gap import GenericAccessService
from bumble.transport.common import AsyncPipeSink

import l2cap_servers
from central_bed import emit, host_controller, spawn, stop_on_signals
from peer_security import BondKeepingSession, PeerSecurity, ScenarioKeyError, scenario_key, signature_mac

log = logging.getLogger("virtual_radio")

# Public address of the controller the outside host stack talks to. 00-00-5E-00-53-xx is
# the IANA range reserved for documentation (RFC 7042), so it never names a real device.
HOST_CONTROLLER_ADDRESS = "00:00:5E:00:53:01"


class ScenarioError(Exception):
    """The scenario file is not valid; the message names the device and field."""


# ---------------------------------------------------------------------------------------
# Scenario model
# ---------------------------------------------------------------------------------------


@dataclass
class DeviceSpec:
    id: str
    name: str
    address: str
    raw: dict[str, Any]


def static_random_address(index: int) -> str:
    """Deterministic random static address (Core Vol 6 Part B 1.3.2.1: top two bits 11)."""
    n = index + 1
    return f"F0:5E:B1:00:{(n >> 8) & 0xFF:02X}:{n & 0xFF:02X}"


def check_static_random(address: str, where: str) -> str:
    parts = address.split(":")
    if len(parts) != 6 or not all(len(p) == 2 for p in parts):
        raise ScenarioError(f"{where}: address {address!r} is not XX:XX:XX:XX:XX:XX")
    try:
        octets = [int(p, 16) for p in parts]
    except ValueError:
        raise ScenarioError(f"{where}: address {address!r} is not hexadecimal") from None
    if octets[0] & 0xC0 != 0xC0:
        raise ScenarioError(
            f"{where}: address {address} is not a random static address "
            "(the two most significant bits must be 11)"
        )
    return address.upper()


def expand_devices(scenario: Any) -> list[DeviceSpec]:
    devices = scenario.get("devices") if isinstance(scenario, dict) else scenario
    if not isinstance(devices, list) or not devices:
        raise ScenarioError("scenario must be a non-empty list of devices (or {\"devices\": [...]})")
    result: list[DeviceSpec] = []
    for entry in devices:
        if not isinstance(entry, dict) or "id" not in entry or "name" not in entry:
            raise ScenarioError(f"device entry {entry!r} needs at least 'id' and 'name'")
        copies = int(entry.get("copies", 1))
        if copies < 1:
            raise ScenarioError(f"device {entry['id']}: copies must be >= 1")
        for copy in range(copies):
            index = len(result)
            if copies == 1:
                dev_id, name = entry["id"], entry["name"]
                address = entry.get("address")
            else:
                dev_id = f"{entry['id']}-{copy + 1}"
                name = f"{entry['name']}-{copy + 1}"
                address = None
                if "address" in entry:
                    raise ScenarioError(f"device {entry['id']}: 'address' cannot be combined with 'copies'")
            address = (
                check_static_random(address, f"device {dev_id}")
                if address
                else static_random_address(index)
            )
            result.append(DeviceSpec(dev_id, name, address, entry))
    ids = [d.id for d in result]
    addresses = [d.address for d in result]
    if len(set(ids)) != len(ids):
        raise ScenarioError(f"device ids are not unique: {ids}")
    if len(set(addresses)) != len(addresses):
        raise ScenarioError(f"device addresses are not unique: {addresses}")
    return result


# ---------------------------------------------------------------------------------------
# Values and generators
# ---------------------------------------------------------------------------------------


def parse_value(spec: Any, where: str) -> bytes:
    """Initial attribute value: {"hex": ".."}, {"utf8": ".."}, {"pattern": "index",
    "length": N} (byte i = i & 0xFF), {"zeros": N}; a bare string is UTF-8."""
    if spec is None:
        return b""
    if isinstance(spec, str):
        return spec.encode("utf-8")
    if not isinstance(spec, dict):
        raise ScenarioError(f"{where}: value {spec!r} is not a string or object")
    if "hex" in spec:
        try:
            return bytes.fromhex(spec["hex"])
        except ValueError:
            raise ScenarioError(f"{where}: {spec['hex']!r} is not hex") from None
    if "utf8" in spec:
        return str(spec["utf8"]).encode("utf-8")
    if "string" in spec:
        return str(spec["string"]).encode("utf-8")
    if spec.get("pattern") == "index":
        return bytes(i & 0xFF for i in range(int(spec.get("length", 0))))
    if "zeros" in spec:
        return bytes(int(spec["zeros"]))
    raise ScenarioError(f"{where}: unknown value form {spec!r}")


def heart_rate_values() -> Iterator[bytes]:
    """Heart Rate Measurement values (Heart Rate Service 1.0, 3.1.1): the flags byte
    cycles through uint8 / uint16 formats, with and without RR-Interval, while the rate
    sweeps 60..180..60 bpm in steps of 3."""
    bpm, step, n = 60, 3, 0
    while True:
        rr = round(60 * 1024 / bpm)  # RR-Interval in 1/1024 s
        variant = n % 4
        if variant == 0:  # uint8 format, sensor contact supported + detected
            yield bytes([0x06, bpm])
        elif variant == 1:  # uint8 format + one RR-Interval
            yield bytes([0x16, bpm]) + struct.pack("<H", rr)
        elif variant == 2:  # uint16 format
            yield bytes([0x07]) + struct.pack("<H", bpm)
        else:  # uint16 format + two RR-Intervals
            yield bytes([0x17]) + struct.pack("<HHH", bpm, rr, rr)
        n += 1
        bpm += step
        if bpm >= 180 or bpm <= 60:
            step = -step


def battery_values() -> Iterator[bytes]:
    """Battery Level (0x2A19), percent: 100 down to 1, then again."""
    level = 100
    while True:
        yield bytes([level])
        level = 100 if level <= 1 else level - 1


def counter_values() -> Iterator[bytes]:
    """uint32 little-endian counter starting at 1."""
    n = 1
    while True:
        yield struct.pack("<I", n & 0xFFFFFFFF)
        n += 1


GENERATORS: dict[str, Callable[[], Iterator[bytes]]] = {
    "heart_rate": heart_rate_values,
    "battery": battery_values,
    "counter": counter_values,
}

PROPERTIES = {
    "broadcast": Characteristic.Properties.BROADCAST,
    "read": Characteristic.Properties.READ,
    "writeWithoutResponse": Characteristic.Properties.WRITE_WITHOUT_RESPONSE,
    "write": Characteristic.Properties.WRITE,
    "notify": Characteristic.Properties.NOTIFY,
    "indicate": Characteristic.Properties.INDICATE,
    "authenticatedSignedWrites": Characteristic.Properties.AUTHENTICATED_SIGNED_WRITES,
}

PERMISSIONS = {
    "read": att.Attribute.Permissions.READABLE,
    "write": att.Attribute.Permissions.WRITEABLE,
    "readEncrypted": att.Attribute.Permissions.READ_REQUIRES_ENCRYPTION,
    "writeEncrypted": att.Attribute.Permissions.WRITE_REQUIRES_ENCRYPTION,
    "readAuthenticated": att.Attribute.Permissions.READ_REQUIRES_AUTHENTICATION,
    "writeAuthenticated": att.Attribute.Permissions.WRITE_REQUIRES_AUTHENTICATION,
}


def parse_flags(names: Any, table: dict[str, Any], zero: Any, where: str) -> Any:
    if not isinstance(names, list):
        raise ScenarioError(f"{where}: expected a list of names, got {names!r}")
    flags = zero
    for name in names:
        if name not in table:
            raise ScenarioError(f"{where}: unknown flag {name!r}; known: {sorted(table)}")
        flags |= table[name]
    return flags


def default_permissions(properties: Characteristic.Properties) -> att.Attribute.Permissions:
    perms = att.Attribute.Permissions(0)
    if properties & Characteristic.Properties.READ:
        perms |= att.Attribute.Permissions.READABLE
    if properties & (Characteristic.Properties.WRITE | Characteristic.Properties.WRITE_WITHOUT_RESPONSE):
        perms |= att.Attribute.Permissions.WRITEABLE
    return perms


# ---------------------------------------------------------------------------------------
# A simulated peripheral
# ---------------------------------------------------------------------------------------


@dataclass
class Updater:
    characteristic: Characteristic
    make_values: Callable[[], Iterator[bytes]]
    interval: float
    # "continuous": one value sequence for the life of the device, carried on across
    # subscriptions and links (otherwise each subscription starts the sequence afresh).
    shared: Iterator[bytes] | None = None

    def values(self) -> Iterator[bytes]:
        return self.shared if self.shared is not None else self.make_values()


IO_CAPABILITIES = {
    "displayOnly": PairingDelegate.IoCapability.DISPLAY_OUTPUT_ONLY,
    "displayYesNo": PairingDelegate.IoCapability.DISPLAY_OUTPUT_AND_YES_NO_INPUT,
    "keyboardOnly": PairingDelegate.IoCapability.KEYBOARD_INPUT_ONLY,
    "noInputNoOutput": PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT,
    "keyboardDisplay": PairingDelegate.IoCapability.DISPLAY_OUTPUT_AND_KEYBOARD_INPUT,
}


class ScenarioPairingDelegate(PairingDelegate):
    """A person at the peripheral who shows or types a fixed passkey and answers numeric
    comparisons as the scenario says."""

    def __init__(self, io: Any, passkey: int, confirm_numbers: bool, device_id: str) -> None:
        super().__init__(io_capability=io)
        self.passkey = passkey
        self.confirm_numbers = confirm_numbers
        self.device_id = device_id
        # The pairing session, when it sends keypress notifications ("keypress").
        self.session: Any = None
        # "typesShownPasskey": the six digits the central shows, as the person reads them
        # off its screen (written to the "passkeyInput" characteristic); None: types `passkey`.
        self.shown_passkey: asyncio.Future[int] | None = None

    async def typed_passkey(self) -> int | None:
        if self.shown_passkey is None:
            return self.passkey
        try:
            # Within the SMP timeout (Vol 3, Part H, 3.4); no passkey refuses the pairing.
            passkey = await asyncio.wait_for(asyncio.shield(self.shown_passkey), 30.0)
        except asyncio.TimeoutError:
            log.info("%s: no passkey was shown to type", self.device_id)
            return None
        self.shown_passkey = asyncio.get_running_loop().create_future()
        return passkey

    async def generate_passkey(self) -> int:
        return self.passkey

    async def get_number(self) -> int | None:
        typed = await self.typed_passkey()
        if typed is None:
            return None
        log.info("%s: types passkey %06d", self.device_id, typed)
        if self.session is not None:
            kinds = [smp.KeypressNotificationType.PASSKEY_ENTRY_STARTED]
            kinds += [smp.KeypressNotificationType.PASSKEY_DIGIT_ENTERED] * 6
            kinds += [smp.KeypressNotificationType.PASSKEY_ENTRY_COMPLETED]
            for kind in kinds:
                self.session.send_command(smp.SMP_Pairing_Keypress_Notification_Command(notification_type=kind))
        return typed

    async def display_number(self, number: int, digits: int) -> None:
        log.info("%s: shows %0*d", self.device_id, digits, number)

    async def compare_numbers(self, number: int, digits: int) -> bool:
        log.info("%s: compares %0*d: %s", self.device_id, digits, number, self.confirm_numbers)
        return self.confirm_numbers

    async def confirm(self, auto: bool = False) -> bool:
        return True


@dataclass
class Peripheral:
    spec: DeviceSpec
    link: LocalLink
    device: Device = field(init=False)
    updaters: list[Updater] = field(default_factory=list)
    tasks: dict[tuple[int, int], asyncio.Task] = field(default_factory=dict)
    att_requests: dict[int, int] = field(default_factory=dict)
    connected_at: dict[int, float] = field(default_factory=dict)
    notifications_sent: dict[int, int] = field(default_factory=dict)
    links_dropped: int = 0
    forget_bonds: bool = False
    keypresses_received: list[int] = field(default_factory=list)
    # Per link handle: whether the key that encrypted it is MITM-protected (made by pairing on
    # that link); a link encrypted with a stored bond is absent and looked up in the keystore.
    mitm_keys: dict[int, bool] = field(default_factory=dict)
    delegate: "ScenarioPairingDelegate | None" = None
    # "scOOB": this device's LE Secure Connections OOB context, and the central's OOB data
    # once the test wrote it to the "oobData": "peer" characteristic.
    oob_context: OobContext | None = None
    peer_oob: OobSharedData | None = None
    security: PeerSecurity = field(init=False)

    def build(self) -> None:
        raw = self.spec.raw
        controller = Controller(f"peer-{self.spec.id}", link=self.link)
        config = DeviceConfiguration()
        config.name = self.spec.name
        config.address = hci.Address(self.spec.address, hci.Address.RANDOM_DEVICE_ADDRESS)
        config.irk = bytes(hci.Address(self.spec.address)) * 3
        config.irk = config.irk[:16]
        irk = raw.get("irk")
        if irk is not None:
            config.irk = scenario_key(irk, f"device {self.spec.id}: 'irk'")
        # "eatt": true serves ATT on enhanced bearers too (PSM 0x0027, Vol 3, Part G, 5.3).
        config.eatt_enabled = bool(raw.get("eatt", False))
        adv = raw.get("advertising", {})
        if adv.get("privacy", False):
            # Advertise and connect with a resolvable private address made from the IRK
            # (Vol 6, Part B, 1.3.2.2), a new one each run; the identity address is "address".
            config.le_privacy_enabled = True
            config.le_rpa_timeout = 0
        interval = float(adv.get("intervalMs", 100))
        config.advertising_interval_min = interval
        config.advertising_interval_max = interval
        config.advertising_data, config.scan_response_data = advertising_payloads(
            self.spec, adv
        )
        appearance = adv.get("appearance")
        if appearance is not None:
            # Replace the default GAP service so the Appearance characteristic (0x2A01)
            # matches the advertised appearance, keeping GAP first and GATT second.
            config.gap_service_enabled = False
            config.gatt_service_enabled = False
        self.device = Device(
            config=config, host=Host(controller, AsyncPipeSink(controller))
        )
        self.security = PeerSecurity(self.device, self.spec.id)
        self.security.install_key_lookup()
        self.device.smp_manager.session_proxy = BondKeepingSession
        if appearance is not None:
            self.device.add_service(GenericAccessService(self.spec.name, int(appearance)))
            self.device.add_default_services(add_gap_service=False, add_gatt_service=True)
        self.device.add_services(self.build_services(raw.get("services", [])))
        self.install_pairing(raw.get("pairing"))
        self.install_session_reset()
        self.device.on(self.device.EVENT_CONNECTION, self.on_connection)
        self.install_att_gate(raw.get("stopAnsweringATTAfter"))
        self.install_signed_writes(raw.get("signedWrites", False))
        l2cap_servers.install(self.device, raw.get("l2cap", []), f"device {self.spec.id}", self.link_security)
        l2cap_servers.install_connector(self.device, raw.get("l2capConnect"), f"device {self.spec.id}")
        rule = raw.get("dropAfterNotifications")
        if rule is not None:
            if not isinstance(rule, dict) or not isinstance(rule.get("count"), int) or rule["count"] < 1:
                raise ScenarioError(f"device {self.spec.id}: dropAfterNotifications needs {{\"count\": N}} with N >= 1")
            if "links" in rule and (not isinstance(rule["links"], int) or rule["links"] < 1):
                raise ScenarioError(f"device {self.spec.id}: dropAfterNotifications 'links' must be an integer >= 1")

    def build_services(self, services: list[dict[str, Any]]) -> list[Service]:
        result = []
        for s_index, s in enumerate(services):
            where = f"device {self.spec.id} service {s.get('uuid', s_index)}"
            if "uuid" not in s:
                raise ScenarioError(f"{where}: missing 'uuid'")
            chars = [
                self.build_characteristic(c, f"{where} characteristic {c.get('uuid', i)}")
                for i, c in enumerate(s.get("characteristics", []))
            ]
            result.append(Service(s["uuid"], chars, primary=s.get("primary", True)))
        return result

    def build_characteristic(self, c: dict[str, Any], where: str) -> Characteristic:
        if "uuid" not in c:
            raise ScenarioError(f"{where}: missing 'uuid'")
        properties = parse_flags(
            c.get("properties", ["read"]), PROPERTIES, Characteristic.Properties(0), where
        )
        permissions = (
            parse_flags(c["permissions"], PERMISSIONS, att.Attribute.Permissions(0), where)
            if "permissions" in c
            else default_permissions(properties)
        )
        value: Any = parse_value(c.get("value"), where)
        if "controlPoint" in c:
            value = control_point_value(c["controlPoint"], where)
        if "barrier" in c:
            value = self.barrier_value(c["barrier"], where)
        if c.get("keypressLog", False):
            # The Keypress Notification types received so far, one octet each.
            value = att.AttributeValue(read=lambda connection: bytes(self.keypresses_received))
        read_error = c.get("readError")
        if read_error is not None:
            # Every read fails with this ATT error code (Vol 3, Part F, 3.4.1.1).
            value = att.AttributeValue(read=lambda connection, code=int(read_error): self.refuse_read(code))
        if c.get("securityLog", False):
            value = self.security.log_value()
        if c.get("passkeyInput", False):
            value = att.AttributeValue(write=self.write_shown_passkey)
        oob = c.get("oobData")
        if oob == "local":
            value = att.AttributeValue(read=self.read_local_oob)
        elif oob == "peer":
            value = att.AttributeValue(write=self.write_peer_oob)
        elif oob is not None:
            raise ScenarioError(f"{where}: oobData must be \"local\" or \"peer\"")
        if permissions & att.Attribute.Permissions.READ_REQUIRES_AUTHENTICATION and isinstance(value, bytes):
            value = self.authenticated_value(value)
        descriptors = []
        for d in c.get("descriptors", []):
            d_where = f"{where} descriptor {d.get('uuid')}"
            if "uuid" not in d:
                raise ScenarioError(f"{d_where}: missing 'uuid'")
            d_perms = parse_flags(
                d.get("permissions", ["read"]), PERMISSIONS, att.Attribute.Permissions(0), d_where
            )
            descriptors.append(Descriptor(d["uuid"], d_perms, parse_value(d.get("value"), d_where)))
        characteristic = Characteristic(c["uuid"], properties, permissions, value, descriptors)
        source = c.get("notify") or c.get("indicate")
        if source is not None:
            generator = source.get("generator")
            if generator not in GENERATORS:
                raise ScenarioError(
                    f"{where}: unknown generator {generator!r}; known: {sorted(GENERATORS)}"
                )
            if not properties & (Characteristic.Properties.NOTIFY | Characteristic.Properties.INDICATE):
                raise ScenarioError(f"{where}: a value source needs the notify or indicate property")
            interval = float(source.get("intervalMs", 1000)) / 1000.0
            if interval <= 0:
                raise ScenarioError(f"{where}: intervalMs must be > 0")
            updater = Updater(characteristic, GENERATORS[generator], interval)
            if source.get("continuous", False):
                updater.shared = updater.make_values()
            self.updaters.append(updater)
            characteristic.on(
                characteristic.EVENT_SUBSCRIPTION,
                lambda bearer, notify, indicate, ch=characteristic: self.on_subscription(
                    bearer, ch, notify, indicate
                ),
            )
        return characteristic

    def barrier_value(self, count: Any, where: str) -> att.AttributeValueV2:
        """barrier: N answers no read until reads of it wait on N different ATT bearers at
        once, then answers them all, each with the central's CID of the bearer it came on
        (uint16 little endian: 0x0004 for the unenhanced bearer, the central's source CID
        for an enhanced one, Vol 3, Part G, 5.3). So a read answers only if the central had
        requests in flight on N bearers at the same time; after 10 s without that, the
        waiting reads fail with ATT error 0x80 (Application Error). Logs each release."""
        if not isinstance(count, int) or count < 1:
            raise ScenarioError(f"{where}: barrier must be an integer >= 1")
        waiting: list[tuple[int, asyncio.Future]] = []

        async def read(bearer: Any) -> bytes:
            cid = bearer.destination_cid if att.is_enhanced_bearer(bearer) else att.ATT_CID
            future = asyncio.get_running_loop().create_future()
            waiting.append((cid, future))
            cids = sorted({c for c, _ in waiting})
            if len(cids) >= count:
                log.info("%s: barrier released: %d reads on bearers %s at once",
                         self.spec.id, len(waiting), " ".join(f"0x{c:04X}" for c in cids))
                for c, f in waiting:
                    f.set_result(c)
                waiting.clear()
            try:
                return struct.pack("<H", await asyncio.wait_for(future, 10.0))
            except asyncio.TimeoutError:
                waiting[:] = [(c, f) for c, f in waiting if f is not future]
                log.info("%s: barrier timed out with reads on bearers %s", self.spec.id,
                         " ".join(f"0x{c:04X}" for c in cids))
                raise att.ATT_Error(0x80) from None

        return att.AttributeValueV2(read=read)

    def authenticated_value(self, value: bytes) -> att.AttributeValue:
        """readAuthenticated: Bumble lets any encrypted link read it (it sets `authenticated`
        on every LE encryption); the spec asks for a MITM-protected key (Vol 3, Part C, 10.3.1,
        security mode 1 level 3). A link encrypted with a Just Works key gets Insufficient
        Authentication (0x05)."""

        async def read(connection: Connection) -> bytes:
            if not await self.mitm_protected(connection):
                log.info("%s: refused a read: the link's key is not MITM-protected", self.spec.id)
                raise att.ATT_Error(att.ATT_INSUFFICIENT_AUTHENTICATION_ERROR)
            return value

        return att.AttributeValue(read=read)

    async def mitm_protected(self, connection: Connection) -> bool:
        known = self.mitm_keys.get(connection.handle)
        if known is not None:
            return known
        if not connection.encryption or self.device.keystore is None:
            return False
        keys = await self.device.keystore.get(str(connection.peer_address))
        key = keys and (keys.ltk or keys.ltk_central)  # ltk_central: the legacy key it distributed (Bumble's name)
        return bool(key and key.authenticated)

    async def link_security(self, connection: Connection) -> str:
        """The level of a link for the L2CAP servers' "security": "none", "encrypted" or
        "authenticated" (a MITM-protected key)."""
        if not connection.encryption:
            return "none"
        return "authenticated" if await self.mitm_protected(connection) else "encrypted"

    def on_encryption_change(self, connection: Connection) -> None:
        # Encrypted during a pairing on this link: the key is the session's (Just Works or
        # not); otherwise with a stored bond, looked up when it matters.
        session = self.device.smp_manager.sessions.get(connection.handle)
        if connection.encryption and session is not None:
            self.mitm_keys[connection.handle] = session.pairing_method != smp.PairingMethod.JUST_WORKS
            log.info("%s: encrypted by pairing (%s)", self.spec.id, session.pairing_method.name)
        else:
            self.mitm_keys.pop(connection.handle, None)
        self.security.on_encryption_change(connection)

    def refuse_read(self, code: int) -> bytes:
        log.info("%s: refused a read with ATT error 0x%02X", self.spec.id, code)
        raise att.ATT_Error(code)

    def write_shown_passkey(self, connection: Connection, value: bytes) -> None:
        """passkeyInput: the central's test writes the passkey it shows (uint32 little
        endian), standing for the person who reads it there and types it here."""
        if self.delegate is None or self.delegate.shown_passkey is None or len(value) != 4:
            raise att.ATT_Error(att.ATT_INVALID_ATTRIBUTE_LENGTH_ERROR if len(value) != 4 else 0x80)
        self.take_shown_passkey(int.from_bytes(value, "little"))

    def take_shown_passkey(self, passkey: int) -> None:
        if self.delegate is None or self.delegate.shown_passkey is None:
            log.warning("%s: does not type shown passkeys (pairing typesShownPasskey)", self.spec.id)
            return
        log.info("%s: reads passkey %06d off the central", self.spec.id, passkey)
        if self.delegate.shown_passkey.done():
            self.delegate.shown_passkey = asyncio.get_running_loop().create_future()
        self.delegate.shown_passkey.set_result(passkey)

    def read_local_oob(self, connection: Connection) -> bytes:
        """oobData "local": this device's LE Secure Connections OOB data, r then
        C = f4(PKx, PKx, r, 0) (Vol 3, Part H, 2.3.5.6.4), each least significant octet first
        as in SMP PDUs. A test reads it the way an app would scan it from a QR code or NFC."""
        if self.oob_context is None:
            raise att.ATT_Error(0x80)
        shared = self.oob_context.share()
        return shared.r + shared.c

    def write_peer_oob(self, connection: Connection, value: bytes) -> None:
        """oobData "peer": the central's OOB data (r then C, 32 octets), for the next pairing."""
        if len(value) != 32:
            raise att.ATT_Error(att.ATT_INVALID_ATTRIBUTE_LENGTH_ERROR)
        self.peer_oob = OobSharedData(r=bytes(value[:16]), c=bytes(value[16:]))
        log.info("%s: took the central's OOB data %s", self.spec.id, self.peer_oob)

    # -- subscriptions ---------------------------------------------------------------

    def on_subscription(self, bearer: Any, characteristic: Characteristic, notify: bool, indicate: bool) -> None:
        connection = bearer.connection if att.is_enhanced_bearer(bearer) else bearer
        key = (connection.handle, characteristic.handle)
        task = self.tasks.pop(key, None)
        if task is not None:
            task.cancel()
        if not (notify or indicate):
            log.info("%s: unsubscribed from 0x%04X", self.spec.id, characteristic.handle)
            return
        updater = next(u for u in self.updaters if u.characteristic is characteristic)
        log.info(
            "%s: %s on 0x%04X every %.3f s (CCCD written on CID 0x%04X)",
            self.spec.id, "notifications" if notify else "indications",
            characteristic.handle, updater.interval,
            bearer.destination_cid if att.is_enhanced_bearer(bearer) else att.ATT_CID,
        )
        self.tasks[key] = asyncio.get_running_loop().create_task(
            self.send_updates(connection, updater, use_indications=not notify)
        )

    async def send_updates(self, connection: Connection, updater: Updater, use_indications: bool) -> None:
        values = updater.values()
        try:
            while True:
                await asyncio.sleep(updater.interval)
                value = next(values)
                updater.characteristic.value = value
                if use_indications:
                    await self.device.indicate_subscriber(connection, updater.characteristic, value)
                else:
                    await self.device.notify_subscriber(connection, updater.characteristic, value)
                    self.count_notification(connection)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the link went away under us
            log.info("%s: updates stopped: %s", self.spec.id, error)

    # -- pairing ---------------------------------------------------------------------

    def install_pairing(self, rule: Any) -> None:
        """pairing: {"io": one of IO_CAPABILITIES, "sc": bool, "mitm": bool, "bonding": bool,
        "passkey": N, "confirmNumbers": bool, "forgetBonds": bool, "legacyOOBTK": hex,
        "maxKeySize": 7..16}. The peripheral pairs as
        these say: it shows (or types) the fixed passkey N, and answers a numeric comparison
        with confirmNumbers (default true). With forgetBonds it forgets every bond when a link
        ends, so the next encryption with the old key is refused (PIN or Key Missing).
        maxKeySize is the Maximum Encryption Key Size of its Pairing Response (default 16).
        Without the key, Bumble's defaults apply."""
        if rule is None:
            return
        if not isinstance(rule, dict):
            raise ScenarioError(f"device {self.spec.id}: 'pairing' must be an object")
        io = rule.get("io", "noInputNoOutput")
        if io not in IO_CAPABILITIES:
            raise ScenarioError(f"device {self.spec.id}: pairing io {io!r} is not one of {sorted(IO_CAPABILITIES)}")
        delegate = ScenarioPairingDelegate(
            IO_CAPABILITIES[io], int(rule.get("passkey", 0)), bool(rule.get("confirmNumbers", True)), self.spec.id
        )
        oob = None
        tk = rule.get("legacyOOBTK")
        if tk is not None:
            # The TK of LE legacy OOB pairing (Vol 3, Part H, 2.3.5.4).
            oob = PairingConfig.OobConfig(
                our_context=None, peer_data=None,
                legacy_context=OobLegacyContext(scenario_key(tk, f"device {self.spec.id}: 'legacyOOBTK'")),
            )
        self.delegate = delegate
        if rule.get("typesShownPasskey", False):
            delegate.shown_passkey = asyncio.get_running_loop().create_future()
        if rule.get("scOOB", False):
            # Its own key pair and r, made once; C refers to that key (2.3.5.6.4).
            self.oob_context = OobContext()
        config = PairingConfig(
            sc=bool(rule.get("sc", True)),
            mitm=bool(rule.get("mitm", False)),
            bonding=bool(rule.get("bonding", True)),
            delegate=delegate,
            oob=oob,
        )
        max_key_size = rule.get("maxKeySize")
        if max_key_size is not None:
            if not isinstance(max_key_size, int) or not 7 <= max_key_size <= 16:
                raise ScenarioError(f"device {self.spec.id}: 'maxKeySize' must be 7 to 16")
            delegate.maximum_encryption_key_size = max_key_size
        if self.spec.raw.get("signedWrites", False):
            # Take the central's CSRK (Vol 3, Part H, 3.6.6): Bumble takes none by default.
            delegate.local_initiator_key_distribution |= PairingDelegate.KeyDistribution.DISTRIBUTE_SIGNING_KEY
        if rule.get("keypress", False):
            self.install_keypress(delegate)
        self.device.pairing_config_factory = lambda connection: self.pairing_config(config)
        if rule.get("securityRequest", False):
            self.install_security_request()
        self.forget_bonds = bool(rule.get("forgetBonds", False))
        self.security.parse_stored_bond(rule.get("storedBond"))

    def pairing_config(self, config: PairingConfig) -> PairingConfig:
        """The config of the pairing about to start: with "scOOB", OOB with this device's
        context and the central's OOB data when it was given (Bumble sets the OOB flag only
        then; Secure Connections uses OOB when either side sets it, 2.3.5.1)."""
        if self.oob_context is None:
            return config
        return PairingConfig(
            sc=config.sc, mitm=config.mitm, bonding=config.bonding, delegate=config.delegate,
            oob=PairingConfig.OobConfig(our_context=self.oob_context, peer_data=self.peer_oob, legacy_context=None),
        )

    def install_session_reset(self) -> None:
        """Bumble keeps a finished pairing session until the link ends and hands it a later
        Pairing Request on the same link, which it then never completes (no keys are
        distributed). Forget the session once it is done, so pairing again on an encrypted
        link (raising its level, Vol 3, Part H, 2.4.4) gets a new one; keys come from the
        keystore after that, as on a new link."""
        manager = self.device.smp_manager
        original = manager.on_pairing

        async def on_pairing(session: Any, identity_address: Any, keys: Any) -> None:
            await original(session, identity_address, keys)
            if manager.sessions.get(session.connection.handle) is session:
                del manager.sessions[session.connection.handle]

        manager.on_pairing = on_pairing  # type: ignore[method-assign]

    def install_security_request(self) -> None:
        """pairing "securityRequest": true sends a Security Request (Vol 3, Part H, 3.6.7)
        with the pairing's AuthReq when the central's first ATT request of a link other than
        Exchange MTU arrives (a central may exchange the MTU as it connects), as a peripheral
        does that wants security before serving anything; the request is answered as usual."""
        server = self.device.gatt_server
        original = server.on_gatt_pdu
        asked: set[int] = set()

        def gated(bearer: Any, pdu: att.ATT_PDU) -> None:
            connection = bearer.connection if att.is_enhanced_bearer(bearer) else bearer
            if (pdu.op_code in att.ATT_REQUESTS and pdu.op_code != att.Opcode.ATT_EXCHANGE_MTU_REQUEST
                    and connection.handle not in asked):
                asked.add(connection.handle)
                log.info("%s: sends a Security Request", self.spec.id)
                self.device.request_pairing(connection)
            original(bearer, pdu)

        server.on_gatt_pdu = gated  # type: ignore[method-assign]

    def install_keypress(self, delegate: "ScenarioPairingDelegate") -> None:
        """pairing "keypress": true sets Keypress in AuthReq (Vol 3, Part H, 3.5.1), which
        Bumble never does, keeps the Pairing Keypress Notifications it receives (3.5.8) for a
        "keypressLog" characteristic, and reports its own typing of the passkey: entry
        started, six digits entered, entry completed."""
        peripheral = self

        class KeypressSession(BondKeepingSession):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self.keypress = True
                delegate.session = self

            def on_smp_command(self, command: smp.SMP_Command) -> None:
                if isinstance(command, smp.SMP_Pairing_Keypress_Notification_Command):
                    log.info("%s: keypress notification %s", peripheral.spec.id, command.notification_type)
                    peripheral.keypresses_received.append(int(command.notification_type))
                    return
                super().on_smp_command(command)

        self.device.smp_manager.session_proxy = KeypressSession

    # -- connections -----------------------------------------------------------------

    def on_connection(self, connection: Connection) -> None:
        handle = connection.handle
        log.info("%s: connected to %s (handle 0x%04X)", self.spec.id, connection.peer_address, handle)
        loop = asyncio.get_running_loop()
        self.att_requests[handle] = 0
        self.connected_at[handle] = loop.time()
        connection.on(connection.EVENT_DISCONNECTION, lambda reason: self.on_disconnection(handle, reason))
        connection.on(connection.EVENT_CONNECTION_ENCRYPTION_CHANGE, lambda: self.on_encryption_change(connection))
        self.security.watch(connection)
        after = self.spec.raw.get("disconnectAfter")
        if after is not None:
            async def drop() -> None:
                await asyncio.sleep(float(after))
                log.info("%s: dropping the link after %s s", self.spec.id, after)
                try:
                    await connection.disconnect(hci.HCI_REMOTE_USER_TERMINATED_CONNECTION_ERROR)
                except Exception as error:
                    log.info("%s: disconnect failed: %s", self.spec.id, error)
            self.tasks[(handle, -1)] = loop.create_task(drop())

    def count_notification(self, connection: Connection) -> None:
        """dropAfterNotifications: {"count": N, "links": L}: the peripheral terminates the
        link (reason 0x13) once it has sent N notifications on it, for its first L links
        (every link when "links" is absent); later links stay up."""
        rule = self.spec.raw.get("dropAfterNotifications")
        handle = connection.handle
        sent = self.notifications_sent.get(handle, 0) + 1
        self.notifications_sent[handle] = sent
        if rule is None or sent != int(rule["count"]):
            return
        limit = rule.get("links")
        if limit is not None and self.links_dropped >= int(limit):
            return
        self.links_dropped += 1
        log.info("%s: dropping the link after %d notifications", self.spec.id, sent)

        async def drop() -> None:
            try:
                await connection.disconnect(hci.HCI_REMOTE_USER_TERMINATED_CONNECTION_ERROR)
            except Exception as error:
                log.info("%s: disconnect failed: %s", self.spec.id, error)

        # Not one of the link's tasks: on_disconnection cancels those, and this one must
        # outlive the link it ends.
        spawn(drop())

    def on_disconnection(self, handle: int, reason: int) -> None:
        log.info("%s: disconnected (handle 0x%04X, reason 0x%02X)", self.spec.id, handle, reason)
        if self.forget_bonds and self.device.keystore is not None:
            log.info("%s: forgetting its bonds", self.spec.id)
            spawn(self.device.keystore.delete_all())
        for key in [k for k in self.tasks if k[0] == handle]:
            self.tasks.pop(key).cancel()
        self.att_requests.pop(handle, None)
        self.connected_at.pop(handle, None)
        self.notifications_sent.pop(handle, None)
        self.mitm_keys.pop(handle, None)

    def install_att_gate(self, limit: Any) -> None:
        """stopAnsweringATTAfter: {"requests": N} answers the first N ATT requests of
        each connection; {"seconds": S} (or a bare number) answers for S seconds after
        the connection is made. Later requests are dropped without a response."""
        if limit is None:
            return
        if isinstance(limit, (int, float)):
            limit = {"seconds": limit}
        max_requests = limit.get("requests")
        max_seconds = limit.get("seconds")
        if max_requests is None and max_seconds is None:
            raise ScenarioError(f"device {self.spec.id}: stopAnsweringATTAfter needs 'requests' or 'seconds'")
        server = self.device.gatt_server
        original = server.on_gatt_pdu

        def gated(bearer: Any, pdu: att.ATT_PDU) -> None:
            if pdu.op_code in att.ATT_REQUESTS:
                connection = bearer.connection if att.is_enhanced_bearer(bearer) else bearer
                handle = connection.handle
                count = self.att_requests.get(handle, 0) + 1
                self.att_requests[handle] = count
                elapsed = asyncio.get_running_loop().time() - self.connected_at.get(handle, 0.0)
                if (max_requests is not None and count > int(max_requests)) or (
                    max_seconds is not None and elapsed > float(max_seconds)
                ):
                    log.info("%s: not answering ATT request #%d %s", self.spec.id, count, pdu.name)
                    return
            original(bearer, pdu)

        server.on_gatt_pdu = gated  # type: ignore[method-assign]

    def install_signed_writes(self, enabled: Any) -> None:
        """signedWrites: true checks Signed Write Commands (Vol 3, Part F, 3.4.5.4), which
        Bumble's GATT server does not handle: the signature must be the MAC of Vol 3, Part H,
        2.4.5 with the CSRK the central distributed when pairing, and its SignCounter must
        grow; a good one writes the value, a bad one is dropped. Logs "signed write accepted"
        or "signed write refused" with the counter."""
        if not enabled:
            return
        server = self.device.gatt_server
        original = server.on_gatt_pdu
        last_counter: dict[bytes, int] = {}

        def checked(bearer: Any, pdu: att.ATT_PDU) -> None:
            if pdu.op_code != att.Opcode.ATT_SIGNED_WRITE_COMMAND:
                original(bearer, pdu)
                return
            data = bytes(pdu.attribute_value)
            value, signature = data[:-12], data[-12:]
            counter = int.from_bytes(signature[:4], "little")
            message = bytes([0xD2]) + pdu.attribute_handle.to_bytes(2, "little") + value + signature[:4]
            keys = getattr(self.device.keystore, "all_keys", {}).values()
            csrks = [k.csrk.value for k in keys if k.csrk is not None]
            for csrk in csrks:
                if signature_mac(message, csrk) == signature[4:] and counter > last_counter.get(csrk, -1):
                    last_counter[csrk] = counter
                    attribute = server.get_attribute(pdu.attribute_handle)
                    if attribute is not None:
                        attribute.value = value
                    log.info("%s: signed write accepted, counter %d", self.spec.id, counter)
                    return
            log.info("%s: signed write refused, counter %d (%d CSRKs known)", self.spec.id, counter, len(csrks))

        server.on_gatt_pdu = checked  # type: ignore[method-assign]

    async def start(self) -> None:
        await self.device.power_on()
        await self.security.load_stored_bond()
        connectable = self.spec.raw.get("advertising", {}).get("connectable", True)
        from bumble.device import AdvertisingType

        await self.device.start_advertising(
            advertising_type=(
                AdvertisingType.UNDIRECTED_CONNECTABLE_SCANNABLE
                if connectable
                else AdvertisingType.UNDIRECTED_SCANNABLE
            ),
            auto_restart=True,
        )


def control_point_value(spec: dict[str, Any], where: str) -> att.AttributeValue:
    """A write-only control point: writes whose hex is listed in 'accept' succeed, any
    other value fails with ATT error 'errorCode' (default 0x80, e.g. Heart Rate Service
    'Control Point Value Not Supported')."""
    accepted = {bytes.fromhex(h) for h in spec.get("accept", [])}
    error_code = int(spec.get("errorCode", 0x80))

    def write(connection: Connection, value: bytes) -> None:
        if bytes(value) not in accepted:
            log.info("%s: control point value %s rejected", where, bytes(value).hex())
            raise att.ATT_Error(error_code)
        log.info("%s: control point value %s accepted", where, bytes(value).hex())

    def read(connection: Connection) -> bytes:
        raise att.ATT_Error(att.ATT_READ_NOT_PERMITTED_ERROR)

    return att.AttributeValue(read=read, write=write)


def ad_structure(ad_type: int, data: bytes) -> bytes:
    """One AD structure: length, type, data (Core Supplement Part A, Core Vol 3 Part C 11)."""
    return bytes([len(data) + 1, ad_type]) + data


def uuid_bytes(text: str) -> bytes:
    from bumble.core import UUID

    return bytes(UUID(text))  # little-endian, as on the air


def advertising_payloads(spec: DeviceSpec, adv: dict[str, Any]) -> tuple[bytes, bytes]:
    """Legacy advertising data and scan response (each at most 31 bytes). The name goes
    into the advertising data when it fits, into the scan response otherwise."""
    fields = [ad_structure(0x01, bytes([0x06]))]  # Flags: LE General Discoverable, BR/EDR not supported
    uuids16 = [u for u in adv.get("serviceUUIDs", []) if len(u) == 4]
    uuids128 = [u for u in adv.get("serviceUUIDs", []) if len(u) != 4]
    if uuids16:
        fields.append(ad_structure(0x03, b"".join(uuid_bytes(u) for u in uuids16)))
    if uuids128:
        fields.append(ad_structure(0x07, b"".join(uuid_bytes(u) for u in uuids128)))
    if "appearance" in adv:
        fields.append(ad_structure(0x19, struct.pack("<H", int(adv["appearance"]))))
    if "txPower" in adv:
        fields.append(ad_structure(0x0A, struct.pack("<b", int(adv["txPower"]))))
    if "manufacturerData" in adv:
        m = adv["manufacturerData"]
        fields.append(
            ad_structure(0xFF, struct.pack("<H", int(m["companyId"])) + bytes.fromhex(m.get("data", "")))
        )
    for entry in adv.get("serviceData", []):
        # Service Data - 16-bit UUID (0x16) or 128-bit UUID (0x21), Supplement Part A 1.11.
        uuid = entry["uuid"]
        fields.append(ad_structure(0x16 if len(uuid) == 4 else 0x21, uuid_bytes(uuid) + bytes.fromhex(entry.get("data", ""))))
    data = b"".join(fields)
    name = ad_structure(0x09, spec.name.encode("utf-8"))
    if len(data) + len(name) <= 31:
        data += name
        scan_response = b""
    else:
        scan_response = name
    if len(data) > 31 or len(scan_response) > 31:
        raise ScenarioError(
            f"device {spec.id}: advertising data ({len(data)} bytes) or scan response "
            f"({len(scan_response)} bytes) exceeds 31 bytes"
        )
    return data, scan_response


# ---------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> int:
    loop = asyncio.get_running_loop()
    stop = stop_on_signals(loop)
    if args.exit_on_stdin_eof:
        fd = sys.stdin.fileno()

        pending = bytearray()

        def on_stdin() -> None:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                log.info("stdin closed")
                loop.remove_reader(fd)
                stop.set()
                return
            pending.extend(chunk)
            while b"\n" in pending:
                line, _, rest = bytes(pending).partition(b"\n")
                pending[:] = rest
                stdin_command(line.decode(errors="replace").split(), peripherals)

        loop.add_reader(fd, on_stdin)

    peripherals: list[Peripheral] = []
    with open(args.scenario, encoding="utf-8") as f:
        scenario = json.load(f)
    specs = expand_devices(scenario)

    link = LocalLink()
    host_side = await host_controller(link, args.port, args.host_address)

    peripherals += [Peripheral(spec, link) for spec in specs]
    for p in peripherals:
        p.build()
    for p in peripherals:
        await p.start()
        log.info("%s (%s) advertising as %s", p.spec.id, p.spec.name, p.spec.address)

    ready = {
        "ready": True,
        "port": host_side.port,
        "hostAddress": args.host_address,
        "devices": [
            {"id": p.spec.id, "name": p.spec.name, "address": p.spec.address, "addressType": "random"}
            for p in peripherals
        ],
    }
    emit(ready)

    await stop.wait()
    log.info("stopping")
    return 0


def stdin_command(words: list[str], peripherals: list[Peripheral]) -> None:
    """A line on stdin (with --exit-on-stdin-eof): `passkey ID NNNNNN` has device ID type the
    passkey the central shows (pairing "typesShownPasskey"), as `passkeyInput` does over GATT
    when the central is free to write it."""
    if len(words) == 3 and words[0] == "passkey" and words[2].isdigit():
        for p in peripherals:
            if p.spec.id == words[1]:
                p.take_shown_passkey(int(words[2]))
                return
    log.warning("stdin: not understood: %s", " ".join(words))


def main() -> None:
    parser = argparse.ArgumentParser(description="Bumble virtual LE radio with simulated peripherals")
    parser.add_argument("--scenario", required=True, help="scenario JSON file")
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0 = any free port)")
    parser.add_argument("--host-address", default=HOST_CONTROLLER_ADDRESS, help="public address of the host-facing controller")
    parser.add_argument("--exit-on-stdin-eof", action="store_true", help="exit when stdin is closed")
    parser.add_argument("--log-level", default=os.environ.get("VIRTUAL_RADIO_LOG", "INFO"))
    args = parser.parse_args()
    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        status = asyncio.run(run(args))
    except (ScenarioError, ScenarioKeyError, OSError, json.JSONDecodeError) as error:
        log.error("%s", error)
        status = 2
    sys.stderr.flush()
    # Leave at once: Bumble may still hold timers and tasks that would delay a normal exit.
    os._exit(status)


if __name__ == "__main__":
    main()
