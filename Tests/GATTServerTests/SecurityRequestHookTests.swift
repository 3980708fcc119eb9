import Dispatch
import Synchronization
import Testing
import BLECore
import GATTServer

/// A read refused for security tells a link that can ask for more
/// (`ATTServerLinkSecurityRequest`) which level it needs, so the peripheral can send a
/// Security Request (Vol 3, Part H, 2.4.6); the Error Response is the one of Vol 3, Part F,
/// 3.4.1.1 either way.
@Suite struct SecurityRequestHookTests {
    final class AskingLink: ATTServerLink, ATTServerLinkSecurityRequest, Sendable {
        let centralDescription = "C0:00:00:00:00:01"
        let sent = Mutex<[[UInt8]]>([])
        let needs = Mutex<[SecurityLevel]>([])
        func sendToCentral(_ pdu: [UInt8]) { sent.withLock { $0.append(pdu) } }
        func securityRefused(needs level: SecurityLevel) { needs.withLock { $0.append(level) } }
    }

    @Test func refusedReadsNameTheLevelTheyNeed() {
        let queue = DispatchQueue(label: "security-request-hook")
        let server = GATTServer(database: ServerBed.database, queue: queue)
        let link = AskingLink()
        // Read Request (0x0A) of 0x0010 (read encrypted), 0x0012 (read authenticated), 0x000E (open).
        for pdu: [UInt8] in [[0x0A, 0x10, 0x00], [0x0A, 0x12, 0x00], [0x0A, 0x0E, 0x00]] {
            queue.sync { server.receive(pdu, on: link) }
        }
        // Error Response: request opcode, handle, Insufficient Encryption (0x0F) / Authentication (0x05).
        #expect(link.sent.withLock { $0 } == [[0x01, 0x0A, 0x10, 0x00, 0x0F], [0x01, 0x0A, 0x12, 0x00, 0x05], [0x0B] + Array("abc".utf8)])
        #expect(link.needs.withLock { $0 } == [.encrypted, .authenticated])
    }
}
