import BLECore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif
import BLETransport

/// Kernel-tier scenario (inside the VM, see `KernelTierGuestTests`) for channels a peer opens
/// to a PSM the kernel listens on (`L2CAPSocketChannel.listen`). HRM of
/// Fixtures/peers/vhci_controller.py opens them when asked on its call-back server, LE_PSM
/// 0x0083 (`serve_call_back` there): it opens a channel to the PSM it was sent (MTU 2048, MPS
/// 247), sends SDUs of 1, 23, 245, 246, 247, 500, 2048 and 7 octets, byte j of SDU i being
/// (i + j) mod 256, then 32 KiB of random octets in 2048-octet SDUs, checks that each comes
/// back, answers "pass" and the SHA-256 of the random octets on the call-back channel and
/// disconnects its channel; a channel the kernel refuses is answered "refused" and the result
/// (Core Spec 5.4 Vol 3, Part A, 4.23).
extension KernelTierGuestTests {
    static let callBackPSM: UInt16 = 0x0083
    static let listenPSM: UInt16 = 0x00A1
    static let securedListenPSM: UInt16 = 0x00A2
    static let callBackSizes = [1, 23, 245, 246, 247, 500, 2048, 7]

    @Test("Kernel mode: HRM opens a channel to our listening PSM 0x00A1; its SDUs arrive byte-exact (32 KiB with equal SHA-256) and go back; BT_SECURITY refuses a plain link; accept ends on cancel, timeout and close")
    func kernelModeListen() async throws {
        try await KernelTierGuest.afterRelease { try HCIAdapters.bringUp(index: 0) }
        let executor = AdapterExecutor(label: "kernel-mode-listen")
        let links = try LinkWatch()
        do {
            let listener = try L2CAPSocketChannel.listen(adapterIndex: 0, psm: Self.listenPSM, mtu: 4096, executor: executor)
            do {
                _ = try L2CAPSocketChannel.listen(adapterIndex: 0, psm: Self.listenPSM, executor: executor)
                Issue.record("a second listener on PSM 0x00A1 was bound")
            } catch {
                #expect(error == .psmInUse(psm: Self.listenPSM, errno: EADDRINUSE))
            }
            // The kernel connects (as central) to HRM's call-back server and asks for a channel
            // to 0x00A1 on that link.
            let control = try await L2CAPSocketChannel.connect(adapterIndex: 0, peer: KernelTierGuest.hrm, psm: Self.callBackPSM, executor: executor, timeout: .seconds(40))
            try await control.send([0xA1, 0x00], timeout: .seconds(10))
            let channel = try await listener.accept(timeout: .seconds(40))
            listener.close()  // channels accepted before stay open
            try #require(channel.peer == KernelTierGuest.hrm && channel.psm == Self.listenPSM, "peer \(channel.peer), PSM \(channel.psm.map { String($0, radix: 16) } ?? "nil")")
            try #require((0x0040...0x007F).contains(channel.localCID), "local CID 0x\(String(channel.localCID, radix: 16))")
            try #require(channel.mtu == 4096 && channel.peerMTU == 2048, "mtu \(channel.mtu) peer \(channel.peerMTU)")

            let expected = Self.callBackSizes.enumerated().map { i, size in (0..<size).map { UInt8(truncatingIfNeeded: i + $0) } }
            var first: [[UInt8]] = []
            var bulk: [UInt8] = []
            let start = ContinuousClock.now
            // Every SDU goes back as it came; HRM disconnects the channel after its verdict.
            while let sdu = try await channel.receive(timeout: .seconds(60)) {
                try await channel.send(sdu, timeout: .seconds(20))
                if first.count < expected.count { first.append(sdu) } else { bulk += sdu }
            }
            let elapsed = ContinuousClock.now - start
            try #require(first == expected, "first SDUs differ: sizes \(first.map(\.count))")
            try #require(bulk.count == 32 * 1024, "\(bulk.count) random octets")
            let verdict = try #require(try await control.receive(timeout: .seconds(20)), "HRM closed the call-back channel")
            try #require(Array(verdict.prefix(4)) == Array("pass".utf8), "HRM: \(String(decoding: verdict.prefix(verdict.count - 32), as: UTF8.self))")
            try #require(Array(verdict.dropFirst(4)) == SHA256.hash(bulk), "HRM's SHA-256 of its random octets differs from ours")
            print("kernel mode, listen: \(first.count + bulk.count / 2048) SDUs (\(expected.map(\.count).reduce(0, +) + bulk.count) octets) from HRM and back in \(elapsed)")

            // BT_SECURITY on the listener: the link is plain, so the kernel refuses HRM's
            // request itself (0x0008, insufficient encryption, for BT_SECURITY_MEDIUM) and
            // nothing is accepted.
            let secured = try L2CAPSocketChannel.listen(adapterIndex: 0, psm: Self.securedListenPSM, security: .encrypted, executor: executor)
            let cancelled = Task { try await secured.accept() }
            let closed = Task { try await secured.accept() }
            try await control.send([0xA2, 0x00], timeout: .seconds(10))
            let answer = try #require(try await control.receive(timeout: .seconds(20)), "HRM closed the call-back channel")
            print("kernel mode, listen with BT_SECURITY encrypted on a plain link: HRM got \(answer.map { String(format: "%02x", $0) }.joined(separator: " "))")
            try #require(answer == Array("refused".utf8) + [0x08, 0x00], "HRM: \(String(decoding: answer, as: UTF8.self))")

            cancelled.cancel()
            await #expect(throws: L2CAPSocketError.acceptCancelled(psm: Self.securedListenPSM)) { try await cancelled.value }
            await #expect(throws: L2CAPSocketError.acceptTimeout(psm: Self.securedListenPSM, after: .milliseconds(300))) {
                try await secured.accept(timeout: .milliseconds(300))
            }
            secured.close()
            await #expect(throws: L2CAPSocketError.listenerClosed(psm: Self.securedListenPSM)) { try await closed.value }
            var iterator = secured.makeAsyncIterator()
            try #require(try await iterator.next() == nil, "the sequence goes on after close")
            control.close()
            try await links.endAll()
        } catch {
            try? HCIAdapters.bringDown(index: 0)
            throw error
        }
        try HCIAdapters.bringDown(index: 0)
        KernelTierGuest.pass("kernelModeListen")
    }
}
