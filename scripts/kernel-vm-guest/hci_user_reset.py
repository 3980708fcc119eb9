"""HCI_Reset over the kernel's HCI user channel, with the system python3 only.

    python3 hci_user_reset.py [DEV]

Opens socket(AF_BLUETOOTH=31, SOCK_RAW, BTPROTO_HCI=1), binds sockaddr_hci
{family 31, dev DEV, channel 1 = HCI_CHANNEL_USER} (Python's socket module binds HCI
sockets only to the raw channel, so bind goes through libc via ctypes), writes H4
01 03 0c 00 (HCI_Reset, Core Specification Vol 4 Part E 7.3.2) and expects the Command
Complete event 04 0e 04 01 03 0c 00 (Vol 4 Part E 7.7.14). Exit 0 on a match.
"""

import ctypes
import errno
import os
import select
import socket
import struct
import sys

AF_BLUETOOTH = 31
BTPROTO_HCI = 1
HCI_CHANNEL_USER = 1
RESET = bytes.fromhex("01030c00")
EXPECTED = bytes.fromhex("040e0401030c00")


def main() -> int:
    dev = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    sock = socket.socket(AF_BLUETOOTH, socket.SOCK_RAW, BTPROTO_HCI)
    libc = ctypes.CDLL(None, use_errno=True)
    address = struct.pack("<HHH", AF_BLUETOOTH, dev, HCI_CHANNEL_USER)
    if libc.bind(sock.fileno(), ctypes.c_char_p(address), len(address)) != 0:
        code = ctypes.get_errno()
        print(f"bind hci{dev}: errno {code} {errno.errorcode.get(code, '?')}")
        return 2
    print("sent", RESET.hex(" "))
    os.write(sock.fileno(), RESET)
    while True:
        ready, _, _ = select.select([sock], [], [], 10.0)
        if not ready:
            print("no Command Complete for HCI_Reset within 10 s")
            return 1
        packet = os.read(sock.fileno(), 1024)
        print("received", packet.hex(" "))
        if packet[:2] == b"\x04\x0e" and packet[3:6] == b"\x01\x03\x0c":
            return 0 if packet == EXPECTED else 1


if __name__ == "__main__":
    sys.exit(main())
