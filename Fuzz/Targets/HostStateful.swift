import Dispatch
import Glibc
import BLECore
import GATTClient
import ATT
import BLETestSupport
import BLEWire
import GATTServer

/// The whole host stack as one state machine: a `Central` and a GATTClient `Peripheral` run on
/// the in-process virtual controller (shared virtual clock, one adapter queue) while an app
/// powers on, scans, connects, discovers, subscribes, reads and writes, and the input plays
/// a hostile controller next to the well-behaved one, injecting HCI events and ACL data.
///
/// Input: one octet of app choices (bit 0: write without response), then records, each a selector octet and its body:
/// - 0, 1: an event: code, length, parameters (Vol 4, Part E, 5.4.4);
/// - 2: an LE Meta event (0x3E): subevent code, length, parameters;
/// - 3: ATT on the app's link: length, ATT PDU (sent in an L2CAP B-frame on CID 0x0004);
/// - 4: L2CAP on the app's link: channel ID (2 octets), length, payload;
/// - 5: any ACL packet: handle and flags (2 octets), length, data;
/// - 6: virtual time, in steps of 10 ms (one octet);
/// - 7: virtual time, in steps of 1 s (one octet).
/// After each record the stack settles. Property: no trap, and once the input is used up the
/// app's script, `Central.close()` included, ends within 31 virtual minutes of further time
/// (every step has a timeout). `HS_TRACE=1` prints where the script stopped.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let left = HostHarness.run(FuzzInput(Array(UnsafeBufferPointer(start: data, count: size))))
    // LeakSanitizer checks right after the input: what the run made must be gone by now.
    let survivors = left.survivors
    fuzzCheck(survivors.isEmpty, "\(survivors.joined(separator: ", ")) outlive(s) the input")
    return 0
}

enum HostHarness {
    /// What must be gone once a run has returned.
    final class Leftovers: @unchecked Sendable { // written by the app's task before it ends, read after it ended
        weak var central: Central?
        weak var host: HCIHost?
        weak var transport: AnyObject?
        weak var controller: VirtualController?
        weak var connection: Connection?
        weak var peripheral: Peripheral?
        weak var bearer: ATTBearer?

        /// The names of what is still alive.
        var survivors: [String] {
            let alive: [(String, AnyObject?)] = [
                ("the Central", central), ("the HCIHost", host), ("the host's transport", transport),
                ("the VirtualController", controller), ("the Connection", connection),
                ("the Peripheral", peripheral), ("the ATT bearer", bearer),
            ]
            return alive.compactMap { $0.1 == nil ? nil : $0.0 }
        }
    }

    static func run(_ input: FuzzInput) -> Leftovers {
        var input = input
        let choices = input.u8()
        let vc = VirtualController()
        let server = GATTServer(database: .heartRateMonitor(), queue: vc.queue)
        vc.addPeripheral(SimulatedPeripheral(address: HostHarness.peer, advertisingData: HostHarness.advertising, attServer: server))
        let transport = vc.makeTransport()
        let central = Central(transport: transport, options: vc.centralOptions())
        let left = Leftovers()
        left.central = central
        left.host = central.host
        left.transport = transport as AnyObject
        left.controller = vc

        let app = Task { await HostHarness.script(central, choices: choices, left: left) }
        // Signalled once the app's task has completed and so released the Central.
        let appDone = DispatchSemaphore(value: 0)
        Task {
            await app.value
            appDone.signal()
        }
        var appEnded = false
        while !input.isAtEnd {
            let step = HostHarness.record(&input, controller: vc)
            blocking { await vc.advance(by: step) }
        }
        // Every wait of the script has a timeout on the virtual clock: moving it on ends them all.
        for _ in 0..<60 where !appEnded {
            appEnded = appDone.wait(timeout: .now() + .milliseconds(20)) == .success
            if !appEnded { blocking { await vc.advance(by: .seconds(31)) } }
        }
        fuzzCheck(appEnded, "the app's script did not end after 31 minutes of virtual time")
        // Breaks the cycles a closed stack leaves in the test support: the controller holds its
        // end of the transport, and the manual clock holds cancelled timers (whose work holds the
        // Central) until their deadline passes.
        vc.closeTransport()
        blocking { await vc.advance(by: .seconds(3600)) }
        return left
    }

    static let peer = LEAddress(BluetoothAddress(rawValue: 0xF0_5E_B1_00_00_01), type: .random)
    /// Flags, Heart Rate service UUID, name (Vol 3, Part C, 11 / Supplement to the Core Specification, Part A).
    static let advertising: [UInt8] = [0x02, 0x01, 0x06, 0x03, 0x03, 0x0D, 0x18, 0x04, 0x09, 0x48, 0x52, 0x4D]
    static let heartRate = BluetoothUUID(uuid16: 0x180D)

    /// The app: each step may fail (the controller is hostile); it goes on as far as it can.
    static func script(_ central: Central, choices: UInt8, left: Leftovers) async {
        var helpers: [Task<Void, any Error>] = []
        do {
            _ = try await central.powerOn()
            let scan = await central.scan(filter: ScanFilter(services: [heartRate]))
            let scanner = Task { for try await _ in scan {} }
            helpers.append(scanner)
            defer { scanner.cancel() }
            let link = try await central.connect(peer, timeout: .seconds(2))
            left.connection = link
            scanner.cancel()
            let peripheral = try await Peripheral(connection: link)
            left.peripheral = peripheral
            left.bearer = await peripheral.bearer
            _ = try await peripheral.services()
            let service = ServiceIdentifier(uuid: "180D")
            let battery = CharacteristicIdentifier(uuid: "2A19", service: ServiceIdentifier(uuid: "180F"))
            let values = try await peripheral.subscribe(to: CharacteristicIdentifier(uuid: "2A37", service: service))
            let listener = Task { for try await _ in values {} }
            helpers.append(listener)
            defer { listener.cancel() }
            _ = try await peripheral.read(CharacteristicIdentifier(uuid: "2A38", service: service))
            try await peripheral.write([0x01] as [UInt8], to: CharacteristicIdentifier(uuid: "2A39", service: service),
                                       type: choices & 1 != 0 ? .withoutResponse : .withResponse)
            _ = try await peripheral.read(battery)
            listener.cancel()
            try await link.disconnect()
        } catch { trace("app stopped: \(error)") }
        // Inside the script, so the clock moves while it waits for the links and the transport.
        await central.close()
        // The app's own tasks end before it does: nothing of the run outlives the run.
        for task in helpers {
            task.cancel()
            _ = await task.result
        }
        trace("app ended")
    }

    /// Sends one record of the input to the host; returns the virtual time to move on by.
    static func record(_ input: inout FuzzInput, controller vc: VirtualController) -> Duration {
        let handle = vc.handle(of: peer) ?? 0x0040
        switch input.u8() % 8 {
        case 0, 1:
            let code = input.u8()
            vc.inject(.event(HCIEventPacket(code: code, parameters: input.take(Int(input.u8())))))
        case 2:
            let subevent = input.u8()
            vc.inject(.event(HCIEventPacket(code: 0x3E, parameters: [subevent] + input.take(Int(input.u8())))))
        case 3:
            vc.inject(.acl(ACLDataPacket(handle: handle, boundary: .firstFlushable, data: bFrame(channel: 0x0004, input.take(Int(input.u8()))))))
        case 4:
            let channel = input.u16()
            vc.inject(.acl(ACLDataPacket(handle: handle, boundary: .firstFlushable, data: bFrame(channel: channel, input.take(Int(input.u8()))))))
        case 5:
            let header = input.u16()
            let boundary = ACLPacketBoundary(rawValue: UInt8(header >> 12) & 0b11) ?? .continuing
            vc.inject(.acl(ACLDataPacket(handle: header, boundary: boundary, broadcast: UInt8(header >> 14), data: input.take(Int(input.u16() % 1024)))))
        case 6:
            return .milliseconds(10 * Int64(input.u8()))
        default:
            return .seconds(Int64(input.u8()))
        }
        return .zero
    }

    /// An L2CAP basic frame (Vol 3, Part A, 3.1): length, channel ID, payload.
    static func bFrame(channel: UInt16, _ payload: [UInt8]) -> [UInt8] {
        [UInt8(payload.count & 0xFF), UInt8(payload.count >> 8), UInt8(channel & 0xFF), UInt8(channel >> 8)] + payload
    }
}

/// A line on standard error when `HS_TRACE` is set (replaying an input by hand).
func trace(_ line: String) {
    guard getenv("HS_TRACE") != nil else { return }
    let text = line + "\n"
    _ = text.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
}
