/*
 * hci-check: small probes of the kernel's Bluetooth HCI sockets, run inside the test VM.
 *
 *   hci-check reset DEV          bind HCI_CHANNEL_USER on hciDEV, send HCI_Reset (H4
 *                                01 03 0c 00), print every packet read until the
 *                                Command Complete for opcode 0x0c03; exit 0 when it is
 *                                04 0e 04 01 03 0c 00 (status 0x00).
 *   hci-check bind DEV           bind HCI_CHANNEL_USER on hciDEV and report the result:
 *                                "bind hciDEV: ok" or "bind hciDEV: errno N NAME".
 *                                Exit 0 on success, 2 on failure.
 *   hci-check up DEV             HCIDEVUP ioctl on a raw HCI socket (power the adapter on
 *                                through the kernel); EALREADY counts as success.
 *   hci-check wait-ready DEV SEC wait (on the management channel, event driven) until the
 *                                kernel has finished setting up hciDEV, at most SEC s.
 *
 * Values: Bluetooth Core Specification Vol 4 Part A 2 (H4 packet indicators), Vol 4 Part E
 * 7.3.2 (HCI_Reset, OGF 0x03 OCF 0x0003) and 7.7.14 (Command Complete); Linux
 * include/net/bluetooth/hci_sock.h and mgmt.h (socket ABI, management opcodes).
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define AF_BLUETOOTH_ 31
#define BTPROTO_HCI_ 1
#define HCI_CHANNEL_RAW 0
#define HCI_CHANNEL_USER 1
#define HCI_CHANNEL_CONTROL 3
#define HCI_DEV_NONE 0xffff
#define HCIDEVUP _IOW('H', 201, int)

#define MGMT_OP_READ_INDEX_LIST 0x0003
#define MGMT_EV_CMD_COMPLETE 0x0001
#define MGMT_EV_INDEX_ADDED 0x0004

struct sockaddr_hci_ {
    sa_family_t hci_family;
    unsigned short hci_dev;
    unsigned short hci_channel;
};

static const char *errno_name(int e) {
    switch (e) {
    case EBUSY: return "EBUSY";
    case ENODEV: return "ENODEV";
    case EPERM: return "EPERM";
    case EALREADY: return "EALREADY";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EINVAL: return "EINVAL";
    case ERFKILL: return "ERFKILL";
    default: return "E?";
    }
}

static int open_bound(int dev, int channel, int *err) {
    int fd = socket(AF_BLUETOOTH_, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI_);
    if (fd < 0) {
        *err = errno;
        return -1;
    }
    struct sockaddr_hci_ a = {AF_BLUETOOTH_, (unsigned short)dev, (unsigned short)channel};
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        *err = errno;
        close(fd);
        return -1;
    }
    return fd;
}

static long ms_left(const struct timespec *deadline) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (deadline->tv_sec - now.tv_sec) * 1000 + (deadline->tv_nsec - now.tv_nsec) / 1000000;
}

/* Reads one packet or returns -1 on timeout/error. */
static ssize_t read_timeout(int fd, uint8_t *buf, size_t cap, const struct timespec *deadline) {
    long left = ms_left(deadline);
    if (left <= 0) return -1;
    struct pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, (int)left);
    if (r <= 0) return -1;
    return read(fd, buf, cap);
}

static void print_hex(const char *prefix, const uint8_t *b, ssize_t n) {
    printf("%s", prefix);
    for (ssize_t i = 0; i < n; i++) printf("%s%02x", i ? " " : "", b[i]);
    printf("\n");
}

static int cmd_reset(int dev) {
    int err = 0;
    int fd = open_bound(dev, HCI_CHANNEL_USER, &err);
    if (fd < 0) {
        printf("bind hci%d: errno %d %s\n", dev, err, errno_name(err));
        return 2;
    }
    const uint8_t reset[] = {0x01, 0x03, 0x0c, 0x00};
    print_hex("sent ", reset, sizeof reset);
    if (write(fd, reset, sizeof reset) != (ssize_t)sizeof reset) {
        printf("write: errno %d\n", errno);
        return 1;
    }
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += 10;
    uint8_t buf[1024];
    for (;;) {
        ssize_t n = read_timeout(fd, buf, sizeof buf, &deadline);
        if (n < 0) {
            printf("no Command Complete for HCI_Reset within 10 s\n");
            return 1;
        }
        print_hex("received ", buf, n);
        if (n >= 6 && buf[0] == 0x04 && buf[1] == 0x0e && buf[3] == 0x01 && buf[4] == 0x03 &&
            buf[5] == 0x0c) {
            const uint8_t want[] = {0x04, 0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00};
            return (n == sizeof want && memcmp(buf, want, sizeof want) == 0) ? 0 : 1;
        }
    }
}

static int cmd_bind(int dev) {
    int err = 0;
    int fd = open_bound(dev, HCI_CHANNEL_USER, &err);
    if (fd < 0) {
        printf("bind hci%d: errno %d %s\n", dev, err, errno_name(err));
        return 2;
    }
    printf("bind hci%d: ok\n", dev);
    close(fd);
    return 0;
}

static int cmd_up(int dev) {
    int err = 0;
    int fd = open_bound(HCI_DEV_NONE, HCI_CHANNEL_RAW, &err);
    if (fd < 0) {
        printf("raw socket: errno %d %s\n", err, errno_name(err));
        return 2;
    }
    if (ioctl(fd, HCIDEVUP, dev) < 0 && errno != EALREADY) {
        printf("up hci%d: errno %d %s\n", dev, errno, errno_name(errno));
        return 2;
    }
    printf("up hci%d: ok\n", dev);
    close(fd);
    return 0;
}

static int cmd_wait_ready(int dev, int seconds) {
    int err = 0;
    int fd = open_bound(HCI_DEV_NONE, HCI_CHANNEL_CONTROL, &err);
    if (fd < 0) {
        printf("management socket: errno %d %s\n", err, errno_name(err));
        return 2;
    }
    const uint8_t req[] = {MGMT_OP_READ_INDEX_LIST & 0xff, MGMT_OP_READ_INDEX_LIST >> 8,
                           0xff, 0xff, 0x00, 0x00};
    if (write(fd, req, sizeof req) != (ssize_t)sizeof req) {
        printf("management write: errno %d\n", errno);
        return 2;
    }
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += seconds;
    uint8_t b[512];
    for (;;) {
        ssize_t n = read_timeout(fd, b, sizeof b, &deadline);
        if (n < 6) {
            printf("hci%d not ready within %d s\n", dev, seconds);
            return 1;
        }
        unsigned ev = b[0] | b[1] << 8, index = b[2] | b[3] << 8;
        if (ev == MGMT_EV_INDEX_ADDED && (int)index == dev) return 0;
        if (ev == MGMT_EV_CMD_COMPLETE && n >= 11 &&
            (b[6] | b[7] << 8) == MGMT_OP_READ_INDEX_LIST && b[8] == 0) {
            unsigned count = b[9] | b[10] << 8;
            for (unsigned i = 0; i < count && 11 + 2 * i + 1 < (unsigned)n; i++)
                if ((int)(b[11 + 2 * i] | b[12 + 2 * i] << 8) == dev) return 0;
        }
    }
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 3 && strcmp(argv[1], "reset") == 0) return cmd_reset(atoi(argv[2]));
    if (argc >= 3 && strcmp(argv[1], "bind") == 0) return cmd_bind(atoi(argv[2]));
    if (argc >= 3 && strcmp(argv[1], "up") == 0) return cmd_up(atoi(argv[2]));
    if (argc >= 4 && strcmp(argv[1], "wait-ready") == 0)
        return cmd_wait_ready(atoi(argv[2]), atoi(argv[3]));
    fprintf(stderr, "usage: hci-check reset|bind|up DEV | wait-ready DEV SECONDS\n");
    return 64;
}
