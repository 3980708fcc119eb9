import Synchronization
import BLECore
import BLETestSupport
import BLEWire
import GATTServer

/// A test-local ATT server: answers Exchange MTU Request (Vol 3, Part F, 3.4.2.1: opcode 0x02,
/// response 0x03 with Server Rx MTU 247), echoes Read Request handles back as values (0x0A ->
/// 0x0B), and records every PDU it receives.
final class EchoATTServer: SimulatedATTServer {
    let received = Mutex<[[UInt8]]>([])
    let connects = Atomic<Int>(0)
    let disconnects = Atomic<Int>(0)

    func linkConnected(_ link: any ATTServerLink) { connects.add(1, ordering: .relaxed) }
    func linkDisconnected(_ link: any ATTServerLink) { disconnects.add(1, ordering: .relaxed) }

    func receive(_ pdu: [UInt8], from link: any ATTServerLink) {
        received.withLock { $0.append(pdu) }
        switch pdu.first {
        case 0x02: link.sendToCentral([0x03, 0xF7, 0x00])
        case 0x0A where pdu.count == 3: link.sendToCentral([0x0B] + Array(repeating: pdu[1], count: 40))
        default: break
        }
    }

    var pdus: [[UInt8]] { received.withLock { $0 } }
}

enum VC {
    static let peer = LEAddress(BluetoothAddress(rawValue: 0xC0_11_22_33_44_55), type: .random)

    /// A virtual controller with `peer` present, and a powered-on central on it.
    static func stack(_ configure: (inout VirtualController.Options) -> Void = { _ in },
                      central configureCentral: (inout Central.Options) -> Void = { _ in },
                      server: EchoATTServer = EchoATTServer()) async throws -> (VirtualController, Central) {
        var options = VirtualController.Options()
        configure(&options)
        let vc = VirtualController(options: options)
        vc.addPeripheral(SimulatedPeripheral(address: peer, advertisingData: [0x02, 0x01, 0x06], attServer: server))
        return (vc, try await vc.poweredOnCentral(configureCentral))
    }
}
