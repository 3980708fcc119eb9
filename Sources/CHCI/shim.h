#ifndef CHCI_SHIM_H
#define CHCI_SHIM_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/epoll.h>
#include <termios.h>
#include <unistd.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
#include <bluetooth/l2cap.h>

/* Function-like ioctl request macros cannot be imported into Swift. */
static inline unsigned long chci_ioctl_hcidevup(void) { return HCIDEVUP; }
static inline unsigned long chci_ioctl_hcidevdown(void) { return HCIDEVDOWN; }
static inline unsigned long chci_ioctl_hcigetdevlist(void) { return HCIGETDEVLIST; }
static inline unsigned long chci_ioctl_hcigetdevinfo(void) { return HCIGETDEVINFO; }

/* Opens and binds an HCI socket on a channel (HCI_CHANNEL_USER or HCI_CHANNEL_RAW).
   Returns the fd, or -1 with errno set (the fd is closed on failure). */
static inline int chci_open_hci_socket(unsigned short dev, unsigned short channel) {
    int fd = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, BTPROTO_HCI);
    if (fd < 0) return -1;
    struct sockaddr_hci addr;
    memset(&addr, 0, sizeof(addr));
    addr.hci_family = AF_BLUETOOTH;
    addr.hci_dev = dev;
    addr.hci_channel = channel;
    if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* Installs a filter on a raw-channel HCI socket that passes every packet type and event. */
static inline int chci_set_filter_all(int fd) {
    struct hci_filter f;
    hci_filter_clear(&f);
    hci_filter_all_ptypes(&f);
    hci_filter_all_events(&f);
    return setsockopt(fd, SOL_HCI, HCI_FILTER, &f, sizeof(f));
}

/* Fills a sockaddr_l2 for an LE fixed channel (cid) or PSM; address bytes are little-endian. */
static inline void chci_fill_sockaddr_l2(struct sockaddr_l2 *addr, const uint8_t bdaddr[6],
                                         uint8_t bdaddr_type, uint16_t psm, uint16_t cid) {
    memset(addr, 0, sizeof(*addr));
    addr->l2_family = AF_BLUETOOTH;
    memcpy(addr->l2_bdaddr.b, bdaddr, 6);
    addr->l2_bdaddr_type = bdaddr_type;
    addr->l2_psm = htobs(psm);
    addr->l2_cid = htobs(cid);
}

static inline int chci_bind_l2(int fd, const struct sockaddr_l2 *addr) {
    return bind(fd, (const struct sockaddr *)addr, sizeof(*addr));
}

static inline int chci_connect_l2(int fd, const struct sockaddr_l2 *addr) {
    return connect(fd, (const struct sockaddr *)addr, sizeof(*addr));
}

/* Accepts one channel on a listening L2CAP socket, made non-blocking and close-on-exec
   (accept4 needs _GNU_SOURCE, which the module's headers are not built with), with the
   peer's address (little-endian bytes) and its BDADDR_* type. Returns the new fd, or -1 with
   errno set (EAGAIN when none waits). */
static inline int chci_accept_l2(int fd, uint8_t bdaddr[6], uint8_t *bdaddr_type) {
    struct sockaddr_l2 addr;
    socklen_t len = sizeof(addr);
    memset(&addr, 0, sizeof(addr));
    int child = accept(fd, (struct sockaddr *)&addr, &len);
    if (child < 0) return -1;
    int flags = fcntl(child, F_GETFL);
    if (flags < 0 || fcntl(child, F_SETFL, flags | O_NONBLOCK) < 0 || fcntl(child, F_SETFD, FD_CLOEXEC) < 0) {
        int saved = errno;
        close(child);
        errno = saved;
        return -1;
    }
    memcpy(bdaddr, addr.l2_bdaddr.b, 6);
    *bdaddr_type = addr.l2_bdaddr_type;
    return child;
}

/* The local CID of a connected L2CAP socket (getsockname), or -1 with errno set. */
static inline int chci_l2cap_local_cid(int fd) {
    struct sockaddr_l2 addr;
    socklen_t len = sizeof(addr);
    memset(&addr, 0, sizeof(addr));
    if (getsockname(fd, (struct sockaddr *)&addr, &len) < 0) return -1;
    return btohs(addr.l2_cid);
}

/* The HCI connection handle under a connected L2CAP socket (L2CAP_CONNINFO), or -1 with
 * errno set (ENOTCONN while the kernel holds the channel for security). */
static inline int chci_l2cap_handle(int fd) {
    struct l2cap_conninfo info;
    socklen_t len = sizeof(info);
    memset(&info, 0, sizeof(info));
    if (getsockopt(fd, SOL_L2CAP, L2CAP_CONNINFO, &info, &len) < 0) return -1;
    return info.hci_handle;
}

/* BT_SECURITY (SOL_BLUETOOTH): sets or reads the security level (BT_SECURITY_LOW..FIPS). */
static inline int chci_set_bt_security(int fd, uint8_t level) {
    struct bt_security sec;
    memset(&sec, 0, sizeof(sec));
    sec.level = level;
    return setsockopt(fd, SOL_BLUETOOTH, BT_SECURITY, &sec, sizeof(sec));
}

static inline int chci_get_bt_security(int fd) {
    struct bt_security sec;
    socklen_t len = sizeof(sec);
    memset(&sec, 0, sizeof(sec));
    if (getsockopt(fd, SOL_BLUETOOTH, BT_SECURITY, &sec, &len) < 0) return -1;
    return sec.level;
}

/* BT_RCVMTU / BT_SNDMTU (SOL_BLUETOOTH), 16-bit values. */
static inline int chci_set_bt_mtu(int fd, int option, uint16_t mtu) {
    return setsockopt(fd, SOL_BLUETOOTH, option, &mtu, sizeof(mtu));
}

static inline int chci_get_bt_mtu(int fd, int option) {
    uint16_t mtu = 0;
    socklen_t len = sizeof(mtu);
    if (getsockopt(fd, SOL_BLUETOOTH, option, &mtu, &len) < 0) return -1;
    return mtu;
}

/* Fills a hci_dev_list_req for HCIGETDEVLIST with room for HCI_MAX_DEV entries. */
struct chci_dev_list {
    uint16_t dev_num;
    struct hci_dev_req dev_req[HCI_MAX_DEV];
};

static inline int chci_get_dev_list(int ctl, struct chci_dev_list *list) {
    memset(list, 0, sizeof(*list));
    list->dev_num = HCI_MAX_DEV;
    return ioctl(ctl, HCIGETDEVLIST, (void *)list);
}

static inline int chci_get_dev_info(int ctl, uint16_t dev, struct hci_dev_info *info) {
    memset(info, 0, sizeof(*info));
    info->dev_id = dev;
    return ioctl(ctl, HCIGETDEVINFO, (void *)info);
}

static inline int chci_dev_up(int ctl, int dev) { return ioctl(ctl, HCIDEVUP, dev); }
static inline int chci_dev_down(int ctl, int dev) { return ioctl(ctl, HCIDEVDOWN, dev); }
static inline int chci_dev_is_up(const struct hci_dev_info *info) { return (info->flags & (1 << HCI_UP)) != 0; }

/* termios raw mode for H4 over a UART. */
static inline int chci_serial_configure(int fd, speed_t speed, int rtscts) {
    struct termios t;
    if (tcgetattr(fd, &t) < 0) return -1;
    cfmakeraw(&t);
    t.c_cflag |= (CLOCAL | CREAD);
    if (rtscts) t.c_cflag |= CRTSCTS; else t.c_cflag &= ~CRTSCTS;
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    if (cfsetispeed(&t, speed) < 0 || cfsetospeed(&t, speed) < 0) return -1;
    if (tcsetattr(fd, TCSANOW, &t) < 0) return -1;
    return tcflush(fd, TCIOFLUSH);
}

/* Asks a raw-channel HCI socket to report each packet's direction (HCI_CMSG_DIR). */
static inline int chci_enable_direction(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_HCI, HCI_DATA_DIR, &one, sizeof(one));
}

/* Reads one packet from an HCI socket. *incoming is 1 for controller-to-host, 0 for a copy of
   host-to-controller traffic, -1 when the socket does not report it. Returns the byte count
   or -1 with errno set. */
static inline ssize_t chci_recv_packet(int fd, void *buf, size_t len, int *incoming) {
    char control[64];
    struct iovec iov = { buf, len };
    struct msghdr msg;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    *incoming = -1;
    ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT);
    if (n < 0) return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_HCI && c->cmsg_type == HCI_CMSG_DIR && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
            int dir;
            memcpy(&dir, CMSG_DATA(c), sizeof(dir));
            *incoming = dir ? 1 : 0;
        }
    }
    return n;
}

/* Opens a pseudo-terminal pair (/dev/ptmx): returns the master fd and fills slave_path and
   *slave_fd with the slave end, set to raw mode. Returns -1 with errno set on failure. */
static inline int chci_open_pty(char *slave_path, size_t len, int *slave_fd) {
    int m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (m < 0) return -1;
    int unlock = 0;
    unsigned int number = 0;
    if (ioctl(m, TIOCSPTLCK, &unlock) < 0 || ioctl(m, TIOCGPTN, &number) < 0) {
        int saved = errno; close(m); errno = saved; return -1;
    }
    snprintf(slave_path, len, "/dev/pts/%u", number);
    int s = open(slave_path, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (s < 0) { int saved = errno; close(m); errno = saved; return -1; }
    struct termios t;
    if (tcgetattr(s, &t) == 0) {
        cfmakeraw(&t);
        tcsetattr(s, TCSANOW, &t);
    }
    *slave_fd = s;
    return m;
}

/* Sets O_NONBLOCK. Returns 0, or -1 with errno set. */
static inline int chci_set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0) return -1;
    return fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/* An epoll instance that watches `fd` for errors and hangups alone (epoll always reports
   EPOLLERR and EPOLLHUP; no other event is asked for). Returns its descriptor, or -1 with
   errno set. */
static inline int chci_error_watch_open(int fd) {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) return -1;
    struct epoll_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLERR | EPOLLHUP;
    ev.data.fd = fd;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
        int e = errno;
        close(ep);
        errno = e;
        return -1;
    }
    return ep;
}

/* 1 when the watch `ep` reports an error or hangup of socket `fd` now, with the socket's
   pending error in *err (EPIPE when none is set); 0 when it reports nothing; -1 with errno. */
static inline int chci_error_watch_check(int ep, int fd, int *err) {
    struct epoll_event ev;
    int n = epoll_wait(ep, &ev, 1, 0);
    if (n <= 0) return n;
    int value = 0;
    socklen_t len = sizeof(value);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &len) < 0 || value == 0) value = EPIPE;
    *err = value;
    return 1;
}

#endif
