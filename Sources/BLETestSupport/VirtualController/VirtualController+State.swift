import BLECore
import BLEWire
import BLETransport

/// The controller's mutable state, in one value the adapter queue owns (`VirtualController.state`).
extension VirtualController {
    struct State {
        // MARK: Transport
        var transport: (any HCITransport)?

        // MARK: Command flow control
        var reportedCommandCredits: UInt8
        /// Commands the host may still send under the last Num_HCI_Command_Packets it was told.
        var hostCommandAllowance = 1
        var scripted: [UInt16: (answer: CommandAnswer, remaining: Int?)] = [:]
        var connectionFailures: [HCIStatus] = []

        // MARK: Records
        var commands: [HCICommandPacket] = []
        var aclPackets: [ACLDataPacket] = []
        var framesReceived: [L2CAPFrame] = []
        var framesSent: [L2CAPFrame] = []
        var events: [HCIEventPacket] = []
        var commandFlowViolations = 0
        var aclFlowViolations = 0
        var droppedATT = 0
        var activity: UInt64 = 0
        var waiters: [Waiter] = []
        var nextWaiterID: UInt64 = 0
        /// Waiters whose id was taken and that are not added yet.
        var unaddedWaiters: Set<UInt64> = []

        // MARK: Devices, scanning, links
        var peripherals: [SimulatedPeripheral] = []
        var scanParameters = ScanParameters()
        var scan: ScanState?
        var scanGeneration: UInt64 = 0
        var pending: PendingConnection?
        /// The Filter Accept List (VirtualController+AcceptList.swift).
        var acceptList: [LEAddress] = []
        var links: [UInt16: Link] = [:]
        var nextHandle: UInt16 = 0x0040
        var hostACLInFlight = 0
        var eventMask: UInt64 = 0
        var leEventMask: UInt64 = 0
        var randomAddress: BluetoothAddress?
        var advertisers: [UInt8: VirtualAdvertisingSet] = [:]
        var usedAdvertisingFamily: AdvertisingFamily?
        var advertisingGeneration: UInt64 = 0
        var resolvingList: [ResolvingListEntry] = []
        var addressResolutionEnabled = false
        var resolvablePrivateAddressTimeout: Duration = .seconds(900)
    }

    // Each field read and written through `state`, so the controller's code names it directly;
    // in debug builds every access checks that it runs on the adapter queue.
    var transport: (any HCITransport)? { get { state.value.transport } _modify { yield &state.value.transport } }
    var reportedCommandCredits: UInt8 { get { state.value.reportedCommandCredits } _modify { yield &state.value.reportedCommandCredits } }
    var hostCommandAllowance: Int { get { state.value.hostCommandAllowance } _modify { yield &state.value.hostCommandAllowance } }
    var scripted: [UInt16: (answer: CommandAnswer, remaining: Int?)] { get { state.value.scripted } _modify { yield &state.value.scripted } }
    var connectionFailures: [HCIStatus] { get { state.value.connectionFailures } _modify { yield &state.value.connectionFailures } }
    var commands: [HCICommandPacket] { get { state.value.commands } _modify { yield &state.value.commands } }
    var aclPackets: [ACLDataPacket] { get { state.value.aclPackets } _modify { yield &state.value.aclPackets } }
    var framesReceived: [L2CAPFrame] { get { state.value.framesReceived } _modify { yield &state.value.framesReceived } }
    var framesSent: [L2CAPFrame] { get { state.value.framesSent } _modify { yield &state.value.framesSent } }
    var events: [HCIEventPacket] { get { state.value.events } _modify { yield &state.value.events } }
    var commandFlowViolations: Int { get { state.value.commandFlowViolations } _modify { yield &state.value.commandFlowViolations } }
    var aclFlowViolations: Int { get { state.value.aclFlowViolations } _modify { yield &state.value.aclFlowViolations } }
    var droppedATT: Int { get { state.value.droppedATT } _modify { yield &state.value.droppedATT } }
    var activity: UInt64 { get { state.value.activity } _modify { yield &state.value.activity } }
    var waiters: [Waiter] { get { state.value.waiters } _modify { yield &state.value.waiters } }
    var nextWaiterID: UInt64 { get { state.value.nextWaiterID } _modify { yield &state.value.nextWaiterID } }
    var unaddedWaiters: Set<UInt64> { get { state.value.unaddedWaiters } _modify { yield &state.value.unaddedWaiters } }
    var peripherals: [SimulatedPeripheral] { get { state.value.peripherals } _modify { yield &state.value.peripherals } }
    var scanParameters: ScanParameters { get { state.value.scanParameters } _modify { yield &state.value.scanParameters } }
    var scan: ScanState? { get { state.value.scan } _modify { yield &state.value.scan } }
    var scanGeneration: UInt64 { get { state.value.scanGeneration } _modify { yield &state.value.scanGeneration } }
    var pending: PendingConnection? { get { state.value.pending } _modify { yield &state.value.pending } }
    var acceptList: [LEAddress] { get { state.value.acceptList } _modify { yield &state.value.acceptList } }
    var links: [UInt16: Link] { get { state.value.links } _modify { yield &state.value.links } }
    var nextHandle: UInt16 { get { state.value.nextHandle } _modify { yield &state.value.nextHandle } }
    var hostACLInFlight: Int { get { state.value.hostACLInFlight } _modify { yield &state.value.hostACLInFlight } }
    var eventMask: UInt64 { get { state.value.eventMask } _modify { yield &state.value.eventMask } }
    var leEventMask: UInt64 { get { state.value.leEventMask } _modify { yield &state.value.leEventMask } }
    var randomAddress: BluetoothAddress? { get { state.value.randomAddress } _modify { yield &state.value.randomAddress } }
    var advertisers: [UInt8: VirtualAdvertisingSet] { get { state.value.advertisers } _modify { yield &state.value.advertisers } }
    var usedAdvertisingFamily: AdvertisingFamily? { get { state.value.usedAdvertisingFamily } _modify { yield &state.value.usedAdvertisingFamily } }
    var advertisingGeneration: UInt64 { get { state.value.advertisingGeneration } _modify { yield &state.value.advertisingGeneration } }
    var resolvingList: [ResolvingListEntry] { get { state.value.resolvingList } _modify { yield &state.value.resolvingList } }
    var addressResolutionEnabled: Bool { get { state.value.addressResolutionEnabled } _modify { yield &state.value.addressResolutionEnabled } }
    var resolvablePrivateAddressTimeout: Duration { get { state.value.resolvablePrivateAddressTimeout } _modify { yield &state.value.resolvablePrivateAddressTimeout } }
}
