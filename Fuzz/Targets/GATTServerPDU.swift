import Dispatch
import Synchronization
import BLECore
import ATT
import GATTClient
import GATTServer
import BLEWire

/// Every client PDU into the GATT server (Vol 3, Part F, 3.4). Input: one octet of choices
/// (bit 0: the link is encrypted and authenticated; bit 1: bonded; bit 2: Exchange MTU 517
/// first), then records of a length octet and that many octets of PDU, fed in order on one link.
///
/// Properties: no trap; every request gets exactly one answer, a response to it or an Error
/// Response naming its opcode; commands, notifications and confirmations get none; no answer
/// is longer than the link's ATT_MTU; the server's own state stays bounded (the prepare
/// queue within its limits).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let choices = input.u8()
    let queue = DispatchQueue(label: "fuzz-gatt-server")
    let server = GATTServer(database: FuzzDatabase.value, queue: queue, prepareQueueLimit: 8, prepareQueueBytes: 256)
    let link = FuzzLink(encrypted: choices & 1 != 0, bonded: choices & 2 != 0)
    var mtu = 23
    queue.sync {
        server.connect(link)
        if choices & 4 != 0 { server.receive([0x02, 0x05, 0x02], on: link); mtu = 517 }
    }
    _ = link.take()
    while input.remaining > 0 {
        let pdu = input.take(Int(input.u8()))
        queue.sync { server.receive(pdu, on: link) }
        let answers = link.take()
        guard let first = pdu.first else { fuzzCheck(answers.isEmpty, "an empty PDU was answered"); continue }
        let opcode = ATTOpcode(first)
        if opcode == .exchangeMTURequest, pdu.count == 3, answers.count == 1, answers[0].first == 0x03 {
            mtu = max(23, min(517, Int(UInt16(pdu[1]) | UInt16(pdu[2]) << 8)))
        }
        let isRequest = opcode.kind == .request || opcode.kind == .unknown && !opcode.isCommand
        guard isRequest else { fuzzCheck(answers.isEmpty, "\(opcode) was answered"); continue }
        fuzzCheck(answers.count == 1, "\(opcode) got \(answers.count) answers")
        guard let answer = answers.first, let kind = answer.first else { continue }
        fuzzCheck(answer.count <= mtu, "an answer of \(answer.count) octets on ATT_MTU \(mtu)")
        if kind == 0x01 {
            fuzzCheck(answer.count == 5 && answer[1] == first, "an Error Response that does not name \(opcode)")
        } else {
            fuzzCheck(kind == first &+ 1, "\(opcode) answered with opcode \(kind)")
        }
    }
    queue.sync {
        fuzzCheck(server.links.values.allSatisfy { $0.prepareQueue.count <= 8 && $0.preparedBytes <= 256 }, "the prepare queue grew past its bounds")
    }
    return 0
}

/// A database with every kind of attribute: 16- and 128-bit UUIDs, secondary and included
/// services, CCCDs, descriptors, security permissions, robust caching.
enum FuzzDatabase {
    static let value = GATTDatabase(services: [
        .init(uuid: BluetoothUUID(uuid16: 0x180F), includes: [BluetoothUUID(uuid16: 0x181A)], characteristics: [
            .init(uuid: BluetoothUUID(uuid16: 0x2A19), properties: [.read, .notify, .indicate], value: [0x64],
                  descriptors: [.presentationFormat(format: 0x04, unit: 0x27AD), .userDescription("Level")]),
            .init(uuid: BluetoothUUID(uuid16: 0xFFF1), properties: [.read, .write, .writeWithoutResponse, .authenticatedSignedWrites],
                  value: [1, 2, 3], maximumLength: 64),
        ]),
        .init(uuid: BluetoothUUID(uuid16: 0x181A), isPrimary: false, characteristics: [
            .init(uuid: BluetoothUUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E")!, properties: [.read, .write],
                  permissions: [.readEncrypted, .writeAuthenticated, .fullKeySize], value: Array(repeating: 0x55, count: 100)),
        ]),
    ], deviceName: "fuzz", robustCaching: true)
}

final class FuzzLink: ATTServerLink, ATTServerLinkSecurity, ATTServerLinkBond, Sendable {
    let centralDescription = "fuzz"
    let isEncrypted: Bool
    let isAuthenticated: Bool
    let bondedPeer: LEAddress?
    private let sent = Mutex<[[UInt8]]>([])

    init(encrypted: Bool, bonded: Bool) {
        isEncrypted = encrypted
        isAuthenticated = encrypted
        bondedPeer = bonded ? LEAddress(BluetoothAddress("C0:00:00:00:00:01")!, type: .random) : nil
    }

    func sendToCentral(_ pdu: [UInt8]) { sent.withLock { $0.append(pdu) } }
    func take() -> [[UInt8]] { sent.withLock { s in defer { s = [] }; return s } }
}
