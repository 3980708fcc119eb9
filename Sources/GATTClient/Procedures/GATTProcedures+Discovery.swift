import BLEWire
import ATT

/// The GATT client procedures of Core Spec 5.4, Vol 3, Part G, 4, each a loop of ATT
/// requests on one bearer that ends on Attribute Not Found, the end of the range, or a
/// response that breaks the procedure (handles that do not increase end it with an error,
/// never loop).
///
/// A procedure of several requests ends within `procedureTimeout` or fails with
/// `.procedureTimeout`, however slowly (within each request's transaction timeout) the peer
/// answers.
///
///     let services = try await GATTProcedures(bearer: bearer).discoverAllPrimaryServices()
public struct GATTProcedures: Sendable {
    /// The overall limit of a procedure by default: ten ATT transaction timeouts, room for a
    /// large database or a 512-octet value at ATT_MTU 23 on the slowest connection interval
    /// (4 s), while a peer that stretches every answer to the 30 s timeout is cut off.
    public static let defaultProcedureTimeout: Duration = .seconds(300)

    public let bearer: ATTBearer
    /// How long one procedure may take from its first request to its last response; nil:
    /// no limit beyond each request's transaction timeout.
    public let procedureTimeout: Duration?

    public init(bearer: ATTBearer, procedureTimeout: Duration? = GATTProcedures.defaultProcedureTimeout) {
        self.bearer = bearer
        self.procedureTimeout = procedureTimeout
    }

    func run(_ procedure: GATTProcedureKind, _ range: ATTHandleRange?) -> GATTProcedureRun {
        GATTProcedureRun(procedure, range: range, bearer: bearer, limit: procedureTimeout)
    }

    @inline(__always)
    func request(_ pdu: ATTPDU) async throws(GATTProcedureError) -> ATTPDU {
        do { return try await bearer.request(pdu) } catch { throw .att(error) }
    }

    /// A request where Attribute Not Found means "nothing more": nil then.
    func requestUnlessNotFound(_ pdu: ATTPDU) async throws(GATTProcedureError) -> ATTPDU? {
        do { return try await bearer.request(pdu) } catch {
            if case .errorResponse(let code, _, _) = error, code == .attributeNotFound { return nil }
            throw .att(error)
        }
    }

    // MARK: Primary service discovery (4.4)

    /// Discover All Primary Services (4.4.1): Read By Group Type of «Primary Service».
    public func discoverAllPrimaryServices(in range: ATTHandleRange = .all) async throws(GATTProcedureError) -> [GATTService] {
        var services: [GATTService] = []
        var run = run(.discoverAllPrimaryServices, range)
        var next = range.start
        while next <= range.end && next != 0 {
            guard let rsp = try await run.requestUnlessNotFound(.readByGroupTypeRequest(
                range: ATTHandleRange(start: next, end: range.end), type: GATTAttributeType.primaryService)) else { break }
            guard case .readByGroupTypeResponse(let list) = rsp, !list.isEmpty else {
                throw .invalidResponse("Read By Group Type Response with no entries")
            }
            for e in list {
                guard e.handle >= next, e.endGroupHandle >= e.handle else {
                    throw .invalidResponse("service at \(e.handle.hex)-\(e.endGroupHandle.hex) does not follow \((next &- 1).hex): handles must increase")
                }
                guard e.value.count == 2 || e.value.count == 16, let uuid = BluetoothUUID(littleEndian: e.value) else {
                    throw .invalidResponse("service at \(e.handle.hex) has a \(e.value.count)-byte UUID")
                }
                services.append(GATTService(uuid: uuid, handle: e.handle, endHandle: e.endGroupHandle))
                if e.endGroupHandle == 0xFFFF { return services }
                next = e.endGroupHandle + 1
            }
            run.progress.found = services.count
            run.progress.nextHandle = next
        }
        return services
    }

    /// Discover Primary Service by Service UUID (4.4.2): Find By Type Value.
    public func discoverPrimaryServices(uuid: BluetoothUUID, in range: ATTHandleRange = .all) async throws(GATTProcedureError) -> [GATTService] {
        let value = uuid.uuid16.map { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] } ?? uuid.as128.littleEndianBytes
        var services: [GATTService] = []
        var run = run(.discoverPrimaryServices(uuid), range)
        var next = range.start
        while next <= range.end && next != 0 {
            guard let rsp = try await run.requestUnlessNotFound(.findByTypeValueRequest(
                range: ATTHandleRange(start: next, end: range.end), type: GATTAttributeType.primaryService, value: value)) else { break }
            guard case .findByTypeValueResponse(let list) = rsp, !list.isEmpty else {
                throw .invalidResponse("Find By Type Value Response with no entries")
            }
            for r in list {
                guard r.start >= next, r.end >= r.start else {
                    throw .invalidResponse("service at \(r.start.hex)-\(r.end.hex) does not follow \((next &- 1).hex): handles must increase")
                }
                services.append(GATTService(uuid: uuid, handle: r.start, endHandle: r.end))
                if r.end == 0xFFFF { return services }
                next = r.end + 1
            }
            run.progress.found = services.count
            run.progress.nextHandle = next
        }
        return services
    }

    // MARK: Relationship discovery (4.5)

    /// Find Included Services (4.5.1): Read By Type of «Include» in the service's range; a
    /// 128-bit included UUID is read from the included service's declaration.
    public func findIncludedServices(of service: GATTService) async throws(GATTProcedureError) -> [GATTIncludedService] {
        var found: [GATTIncludedService] = []
        var run = run(.findIncludedServices, service.range)
        var next = service.handle
        while next <= service.endHandle && next != 0 {
            guard let rsp = try await run.requestUnlessNotFound(.readByTypeRequest(
                range: ATTHandleRange(start: next, end: service.endHandle), type: GATTAttributeType.include)) else { break }
            guard case .readByTypeResponse(let list) = rsp, !list.isEmpty else {
                throw .invalidResponse("Read By Type Response with no entries")
            }
            for e in list {
                guard e.handle >= next else {
                    throw .invalidResponse("include declaration \(e.handle.hex) does not follow \((next &- 1).hex): handles must increase")
                }
                guard e.value.count == 4 || e.value.count == 6 else {
                    throw .invalidResponse("include declaration \(e.handle.hex) has \(e.value.count) bytes, not 4 or 6")
                }
                let start = UInt16(e.value[0]) | UInt16(e.value[1]) << 8
                let end = UInt16(e.value[2]) | UInt16(e.value[3]) << 8
                var uuid: BluetoothUUID
                if e.value.count == 6 {
                    uuid = BluetoothUUID(uuid16: UInt16(e.value[4]) | UInt16(e.value[5]) << 8)
                } else {
                    guard case .readResponse(let v) = try await run.request(.readRequest(handle: start)),
                          v.count == 16, let u = BluetoothUUID(littleEndian: v) else {
                        throw .invalidResponse("included service declaration \(start.hex) does not hold a 128-bit UUID")
                    }
                    uuid = u
                }
                found.append(GATTIncludedService(declarationHandle: e.handle,
                                                 service: GATTService(uuid: uuid, handle: start, endHandle: end, isPrimary: false)))
                if e.handle == 0xFFFF { return found }
                next = e.handle + 1
            }
            run.progress.found = found.count
            run.progress.nextHandle = next
        }
        return found
    }

    // MARK: Characteristic discovery (4.6)

    /// Discover All Characteristics of a Service (4.6.1), or by UUID (4.6.2) when `uuid` is
    /// given: Read By Type of «Characteristic» in the service's range.
    public func discoverCharacteristics(of service: GATTService, uuid: BluetoothUUID? = nil) async throws(GATTProcedureError) -> [GATTCharacteristic] {
        var declarations: [(handle: UInt16, properties: UInt8, valueHandle: UInt16, uuid: BluetoothUUID)] = []
        var run = run(.discoverCharacteristics, service.range)
        var next = service.handle
        while next <= service.endHandle && next != 0 {
            guard let rsp = try await run.requestUnlessNotFound(.readByTypeRequest(
                range: ATTHandleRange(start: next, end: service.endHandle), type: GATTAttributeType.characteristic)) else { break }
            guard case .readByTypeResponse(let list) = rsp, !list.isEmpty else {
                throw .invalidResponse("Read By Type Response with no entries")
            }
            for e in list {
                // The service's first handle holds its own declaration (Vol 3, Part G, 3.1).
                guard e.handle >= next, e.handle > service.handle, e.handle <= service.endHandle else {
                    throw .invalidResponse("characteristic declaration \(e.handle.hex) does not follow \((next &- 1).hex) within \(service.range): handles must increase")
                }
                guard e.value.count == 5 || e.value.count == 19, let u = BluetoothUUID(littleEndian: e.value[3...]) else {
                    throw .invalidResponse("characteristic declaration \(e.handle.hex) has \(e.value.count) bytes, not 5 or 19")
                }
                let valueHandle = UInt16(e.value[1]) | UInt16(e.value[2]) << 8
                guard valueHandle > e.handle, valueHandle <= service.endHandle else {
                    throw .invalidResponse("characteristic declaration \(e.handle.hex) points at value handle \(valueHandle.hex) outside \(service.range)")
                }
                declarations.append((e.handle, e.value[0], valueHandle, u))
                if e.handle == 0xFFFF { break }
                next = e.handle + 1
            }
            if declarations.last?.handle == 0xFFFF { break }
            run.progress.found = declarations.count
            run.progress.nextHandle = next
        }
        var result: [GATTCharacteristic] = []
        for (i, d) in declarations.enumerated() {
            let end = i + 1 < declarations.count ? declarations[i + 1].handle - 1 : service.endHandle
            // The value follows its declaration, before the next one (Vol 3, Part G, 3.3).
            guard d.valueHandle <= end else {
                throw .invalidResponse("characteristic declaration \(d.handle.hex) points at value handle \(d.valueHandle.hex), past the next declaration \((end &+ 1).hex)")
            }
            if let uuid, d.uuid != uuid { continue }
            result.append(GATTCharacteristic(uuid: d.uuid, handle: d.handle, valueHandle: d.valueHandle,
                                             properties: GATTCharacteristicProperties(rawValue: d.properties),
                                             endHandle: end, serviceUUID: service.uuid))
        }
        return result
    }

    // MARK: Descriptor discovery (4.7)

    /// Discover All Characteristic Descriptors (4.7.1): Find Information over the
    /// characteristic's descriptor range.
    public func discoverDescriptors(of characteristic: GATTCharacteristic) async throws(GATTProcedureError) -> [GATTDescriptor] {
        guard let range = characteristic.descriptorRange else { return [] }
        return try await discoverDescriptors(in: range)
    }

    /// Find Information over `range` (4.7.1).
    public func discoverDescriptors(in range: ATTHandleRange) async throws(GATTProcedureError) -> [GATTDescriptor] {
        var found: [GATTDescriptor] = []
        var run = run(.discoverDescriptors, range)
        var next = range.start
        while next <= range.end && next != 0 {
            guard let rsp = try await run.requestUnlessNotFound(.findInformationRequest(ATTHandleRange(start: next, end: range.end))) else { break }
            guard case .findInformationResponse(_, let entries) = rsp, !entries.isEmpty else {
                throw .invalidResponse("Find Information Response with no entries")
            }
            for e in entries {
                guard e.handle >= next, e.handle <= range.end else {
                    throw .invalidResponse("descriptor \(e.handle.hex) does not follow \((next &- 1).hex) within \(range): handles must increase")
                }
                found.append(GATTDescriptor(uuid: e.uuid, handle: e.handle))
                if e.handle == 0xFFFF { return found }
                next = e.handle + 1
            }
            run.progress.found = found.count
            run.progress.nextHandle = next
        }
        return found
    }
}
