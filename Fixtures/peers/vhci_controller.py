"""A Bumble controller behind the Linux kernel's virtual HCI driver, with one peripheral.

Opens /dev/vhci (module hci_vhci), so the kernel gets a new adapter hciN ("Bus: Virtual")
whose controller is a bumble.controller.Controller. A second controller on the same
LocalLink is driven by a Bumble Device that advertises as a heart-rate monitor:

    name "HRM", random static address F0:00:00:00:48:52, connectable,
    advertising data 02 01 06 | 04 09 48 52 4D | 03 03 0D 18
    (Flags LE General Discoverable + BR/EDR Not Supported; Complete Local Name "HRM";
    Complete List of 16-bit Service UUIDs 0x180D), and a GATT Heart Rate service
    (0x180D) with Heart Rate Measurement (0x2A37, notify, sent once a second to subscribers: 00 48) and Body Sensor Location
    (0x2A38, read, 0x01 = chest).

The peripheral also serves, for the kernel's L2CAP sockets:

    an LE credit-based channel echo server on LE_PSM 0x0080 (MTU 2048, MPS 247, 16 credits:
    every SDU is written back), a second one for bulk transfers on LE_PSM 0x0082 (MTU 8192,
    MPS 8194: one K-frame per SDU), a call-back server on LE_PSM 0x0083 (see serve_call_back:
    HRM opens a channel to a PSM the central listens on), and a service B1E5E000-5EC0-4E00-8000-000000000001 whose
    characteristic B1E5E000-5EC0-4E00-8000-000000000002 reads "secret" only on an encrypted
    link (else ATT error Insufficient Encryption 0x0F), and B1E5E000-5EC0-4E00-8000-000000000004
    (read, no security) whose one octet counts the pairings peers started with HRM since the
    fixture started (Bumble's pairing_start), so a test can see from the peer's side whether
    a connection paired again, and B1E5E000-5EC0-4E00-8000-000000000007 (read, write, no
    security): reading gives the number of peers HRM holds keys for (one octet), writing any
    value makes HRM forget every bond, as a device does after a factory reset (its next Long
    Term Key Request is answered with a negative reply, so the central's encryption with the
    old key fails with PIN or Key Missing, 0x06). Pairing is Bumble's default: Secure Connections or legacy, no
    input/no output (Just Works), bonding; Bumble keeps the keys in memory.

A second peripheral on the same link, for pairing with MITM protection:

    name "KEY", random static address F0:00:00:00:4B:45, connectable, advertising data
    02 01 06 | 04 09 4B 45 59 (Flags 0x06; Complete Local Name "KEY"). IO capability
    DisplayOnly, showing the fixed passkey 123456 (a person would read it off the device),
    Secure Connections, MITM, bonding. It serves B1E5E000-5EC0-4E00-8000-000000000003, which
    reads "authenticated" only on a link encrypted with an authenticated key (else ATT error
    Insufficient Authentication 0x05 or Insufficient Encryption 0x0F), and the pairing counter
    B1E5E000-5EC0-4E00-8000-000000000004 as HRM does.

Both controllers report LE ACL buffers of 1024 octets (Bumble's default is 27): under
software emulation every ACL packet costs Python time in two controllers, and the kernel
sets its LE MPS from the buffer size (its MPS is the LE ACL buffer size minus the L2CAP
header), so 27-octet buffers made a 1 MiB echo take minutes.

Usage (inside a kernel that has hci_vhci loaded, as root):

    python vhci_controller.py [--vhci /dev/vhci] [--address C0:00:00:00:00:01]
                              [--second-address C0:00:00:00:00:02]

With --second-address the kernel gets a second adapter (hci1) on the same link, for a
program on one adapter with the kernel on the other as its peer.

Prints "ready" on stdout once the peripheral advertises; runs until killed.
"""

import argparse
import asyncio
import errno
import hashlib
import logging
import os
import signal

from bumble import gatt, l2cap
from bumble.controller import Controller
from bumble.core import ProtocolError
from bumble.device import Device
from bumble.hci import Address
from bumble.link import LocalLink
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.transport import open_transport

PERIPHERAL_ADDRESS = "F0:00:00:00:48:52"
ECHO_PSM = 0x0080
BULK_ECHO_PSM = 0x0082
CALL_BACK_PSM = 0x0083
CALL_BACK_SIZES = [1, 23, 245, 246, 247, 500, 2048, 7]
CALL_BACK_BULK = 32 * 1024
LE_ACL_BUFFER_SIZE = 1000
SECURE_SERVICE = "B1E5E000-5EC0-4E00-8000-000000000001"
SECURE_CHARACTERISTIC = "B1E5E000-5EC0-4E00-8000-000000000002"
PAIRING_COUNTER = "B1E5E000-5EC0-4E00-8000-000000000004"
BOND_ERASER = "B1E5E000-5EC0-4E00-8000-000000000007"
ADVERTISING_DATA = bytes.fromhex("020106" "0409" "48524d" "0303" "0d18")
KEYPAD_ADDRESS = "F0:00:00:00:4B:45"
KEYPAD_PASSKEY = 123456
AUTHENTICATED_SERVICE = "B1E5E000-5EC0-4E00-8000-000000000005"
AUTHENTICATED_CHARACTERISTIC = "B1E5E000-5EC0-4E00-8000-000000000003"
KEYPAD_ADVERTISING_DATA = bytes.fromhex("020106" "0409" "4b4559")


def heart_rate_service() -> gatt.Service:
    measurement = gatt.Characteristic(
        gatt.GATT_HEART_RATE_MEASUREMENT_CHARACTERISTIC,
        gatt.Characteristic.Properties.NOTIFY,
        gatt.Characteristic.READABLE,
        bytes([0x00, 72]),  # Flags 0 (UINT8 format), 72 bpm
    )
    location = gatt.Characteristic(
        gatt.GATT_BODY_SENSOR_LOCATION_CHARACTERISTIC,
        gatt.Characteristic.Properties.READ,
        gatt.Characteristic.READABLE,
        bytes([0x01]),  # Chest
    )
    return gatt.Service(gatt.GATT_HEART_RATE_SERVICE, [measurement, location])


def secure_service() -> gatt.Service:
    secret = gatt.Characteristic(
        SECURE_CHARACTERISTIC,
        gatt.Characteristic.Properties.READ,
        gatt.Characteristic.READABLE | gatt.Characteristic.READ_REQUIRES_ENCRYPTION,
        b"secret",
    )
    return gatt.Service(SECURE_SERVICE, [secret])


def pairing_counter(device: Device) -> gatt.Service:
    """A service with one readable octet: the pairings peers started with `device`."""
    started = [0]

    def on_pairing_start(_connection) -> None:
        started[0] += 1

    device.on("pairing_start", on_pairing_start)
    counter = gatt.Characteristic(
        PAIRING_COUNTER,
        gatt.Characteristic.Properties.READ,
        gatt.Characteristic.READABLE,
        gatt.CharacteristicValue(read=lambda _connection: bytes([started[0] & 0xFF])),
    )
    return gatt.Service("B1E5E000-5EC0-4E00-8000-000000000006", [counter])


def bond_eraser(device: Device) -> gatt.Service:
    """A service whose one characteristic counts `device`'s bonds (read) and forgets them (write)."""

    async def count(_connection) -> bytes:
        return bytes([len(await device.keystore.get_all()) & 0xFF])

    async def forget(_connection, _value) -> None:
        await device.keystore.delete_all()

    eraser = gatt.Characteristic(
        BOND_ERASER,
        gatt.Characteristic.Properties.READ | gatt.Characteristic.Properties.WRITE,
        gatt.Characteristic.READABLE | gatt.Characteristic.WRITEABLE,
        gatt.CharacteristicValue(read=count, write=forget),
    )
    return gatt.Service("B1E5E000-5EC0-4E00-8000-000000000008", [eraser])


class ShownPasskey(PairingDelegate):
    """Display only, always showing KEYPAD_PASSKEY."""

    def __init__(self) -> None:
        super().__init__(io_capability=PairingDelegate.IoCapability.DISPLAY_OUTPUT_ONLY)

    async def generate_passkey(self) -> int:
        return KEYPAD_PASSKEY


async def start_keypad(link: LocalLink) -> Device:
    """The peripheral KEY: Passkey Entry (it shows, the central types), MITM, bonding."""
    controller = Controller("key", link=link)
    device = Device.with_hci("KEY", Address(KEYPAD_ADDRESS), controller, controller)
    device.pairing_config_factory = lambda _connection: PairingConfig(
        sc=True, mitm=True, bonding=True, delegate=ShownPasskey()
    )
    secret = gatt.Characteristic(
        AUTHENTICATED_CHARACTERISTIC,
        gatt.Characteristic.Properties.READ,
        gatt.Characteristic.READABLE | gatt.Characteristic.READ_REQUIRES_AUTHENTICATION,
        b"authenticated",
    )
    device.add_service(gatt.Service(AUTHENTICATED_SERVICE, [secret]))
    device.add_service(pairing_counter(device))
    await device.power_on()
    await device.start_advertising(advertising_data=KEYPAD_ADVERTISING_DATA, auto_restart=True)
    return device


def serve_echo(device: Device) -> None:
    """Writes every SDU received on LE_PSM ECHO_PSM (and BULK_ECHO_PSM) back on its channel."""

    def on_channel(channel: l2cap.LeCreditBasedChannel) -> None:
        channel.sink = channel.write

    device.create_l2cap_server(
        spec=l2cap.LeCreditBasedChannelSpec(psm=ECHO_PSM, mtu=2048, mps=247, max_credits=16),
        handler=on_channel,
    )
    device.create_l2cap_server(
        spec=l2cap.LeCreditBasedChannelSpec(psm=BULK_ECHO_PSM, mtu=8192, mps=8194, max_credits=8),
        handler=on_channel,
    )


def serve_call_back(device: Device) -> None:
    """A central that listens on an LE_PSM of its own sends it, 2 octets little-endian, as an
    SDU on a channel to LE_PSM CALL_BACK_PSM. HRM then opens an LE credit-based channel to
    that PSM on the same link (MTU 2048, MPS 247, 16 credits) and sends, in order, the SDUs of
    CALL_BACK_SIZES (byte j of SDU i is (i + j) mod 256), then CALL_BACK_BULK random octets in
    2048-octet SDUs, and expects each SDU back on that channel. It answers on the call-back
    channel with one SDU: "pass" or "fail: why", followed by the SHA-256 of the random octets,
    then disconnects the channel; or "refused" and the 2-octet result (little-endian) when the
    central refused the channel. A third octet 0x01 asks for the SDUs without the echo (a
    central that only reads them, as `ble l2cap --listen` with nothing on stdin): HRM sends
    them, answers "sent" and the SHA-256 of the random octets, then disconnects the channel."""
    tasks = set()

    def on_channel(control: l2cap.LeCreditBasedChannel) -> None:
        def on_request(sdu: bytes) -> None:
            if len(sdu) not in (2, 3) or (len(sdu) == 3 and sdu[2] != 0x01):
                control.write(b"fail: send the PSM as 2 octets, then 0x01 for no echo")
                return
            echo = len(sdu) == 2
            task = asyncio.create_task(call_back(control, int.from_bytes(sdu[:2], "little"), echo))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        control.sink = on_request

    device.create_l2cap_server(
        spec=l2cap.LeCreditBasedChannelSpec(psm=CALL_BACK_PSM, mtu=256, mps=247, max_credits=4),
        handler=on_channel,
    )


async def call_back(control: l2cap.LeCreditBasedChannel, psm: int, echo: bool = True) -> None:
    spec = l2cap.LeCreditBasedChannelSpec(psm=psm, mtu=2048, mps=247, max_credits=16)
    try:
        channel = await control.connection.create_l2cap_channel(spec=spec)
    except ProtocolError as error:
        control.write(b"refused" + int(error.error_code).to_bytes(2, "little"))
        return
    bulk = os.urandom(CALL_BACK_BULK)
    sent = [bytes((i + j) & 0xFF for j in range(size)) for i, size in enumerate(CALL_BACK_SIZES)]
    sent += [bulk[i : i + 2048] for i in range(0, len(bulk), 2048)]
    received = []
    all_back = asyncio.get_running_loop().create_future()

    def on_echo(sdu: bytes) -> None:
        received.append(bytes(sdu))
        if len(received) == len(sent) and not all_back.done():
            all_back.set_result(None)

    async def send_sdus() -> None:
        for sdu in sent:
            # Bumble's write is a byte stream: writes queued together would go out joined
            # into SDUs of the peer's MTU, so each SDU is sent whole before the next.
            channel.write(sdu)
            await channel.drain()

    async def send_all() -> None:
        await send_sdus()
        await all_back

    channel.sink = on_echo
    if not echo:
        await send_sdus()
        control.write(b"sent" + hashlib.sha256(bulk).digest())
        await channel.disconnect()
        return
    try:
        await asyncio.wait_for(send_all(), 90)
        verdict = b"pass" if received == sent else b"fail: the echo differs"
    except asyncio.TimeoutError:
        verdict = f"fail: {len(received)} of {len(sent)} SDUs came back in 90 s".encode()
    control.write(verdict + hashlib.sha256(bulk).digest())
    await channel.disconnect()


async def notify_heart_rate(device: Device, measurement: gatt.Characteristic) -> None:
    """Sends the measurement once a second to every client that enabled notifications."""
    while True:
        await asyncio.sleep(1.0)
        try:
            await device.notify_subscribers(measurement, bytes([0x00, 72]))
        except Exception as error:  # a link that drops mid-send
            logging.warning("notification not sent: %s", error)


class AdapterSink:
    """Writes the controller's packets to /dev/vhci the way a USB or UART driver hands them to
    the kernel: a packet the kernel refuses because the adapter is down (ENXIO: events or
    advertising reports of a scan still running when the host took hci0 down; Bumble's HCI
    Reset does not stop scanning) is dropped and counted. Bumble's own pipe transport closes
    /dev/vhci on the first failed write, and the kernel then unregisters hci0."""

    def __init__(self, transport) -> None:
        self.fd = transport.sink.transport.get_extra_info("pipe").fileno()
        self.dropped = 0

    def on_packet(self, packet: bytes) -> None:
        try:
            os.write(self.fd, packet)
        except OSError as error:
            if error.errno != errno.ENXIO:
                raise
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                logging.warning("adapter down: %d packets to the host dropped", self.dropped)


def kernel_adapter(name: str, transport, link: LocalLink, address: str) -> Controller:
    """A controller the kernel talks to through one open /dev/vhci (one adapter hciN)."""
    controller = Controller(
        name,
        host_source=transport.source,
        host_sink=AdapterSink(transport),
        link=link,
        public_address=address,
    )
    # LocalLink labels LE ACL data with the sender's random address, whatever own address
    # type the connection used; a host connecting with its public address would have its
    # data dropped by the peer ("no connection for 00:00:00:00:00:00").
    controller.random_address = controller.public_address
    controller.le_acl_data_packet_length = LE_ACL_BUFFER_SIZE
    return controller


async def run(vhci_path: str, address: str, second_address: str | None) -> None:
    link = LocalLink()
    async with await open_transport(f"vhci:{vhci_path}") as transport:
        kernel_adapter("kernel", transport, link, address)
        # A second adapter on the same link (hci1), for a program that drives it through the
        # user channel while the kernel, on hci0, is its peer.
        second = None
        if second_address is not None:
            second = await open_transport(f"vhci:{vhci_path}")
            kernel_adapter("second", second, link, second_address)

        # The simulated peripheral on the same link.
        peripheral_controller = Controller("hrm", link=link)
        peripheral_controller.le_acl_data_packet_length = LE_ACL_BUFFER_SIZE
        device = Device.with_hci(
            "HRM", Address(PERIPHERAL_ADDRESS), peripheral_controller, peripheral_controller
        )
        service = heart_rate_service()
        device.add_service(service)
        device.add_service(secure_service())
        device.add_service(pairing_counter(device))
        device.add_service(bond_eraser(device))
        serve_echo(device)
        serve_call_back(device)
        notifier = asyncio.create_task(notify_heart_rate(device, service.characteristics[0]))
        await device.power_on()
        await device.start_advertising(
            advertising_data=ADVERTISING_DATA, auto_restart=True
        )
        await start_keypad(link)
        print("ready", flush=True)

        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        notifier.cancel()
        if second is not None:
            await second.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vhci", default="/dev/vhci", help="virtual HCI device node")
    parser.add_argument(
        "--address", default="C0:00:00:00:00:01", help="public address of the kernel's controller"
    )
    parser.add_argument(
        "--second-address",
        help="open /dev/vhci once more: a second adapter (hci1) with this public address on the same link",
    )
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING)
    asyncio.run(run(args.vhci, args.address, args.second_address))


if __name__ == "__main__":
    main()
