#if GATT_VALUES
import BLEWire

/// The typed value decoders of GATTClient (Sources/GATTClient/Values, compiled into this
/// target by scripts/fuzz with -D GATT_VALUES). Input: one selector byte for the type, then
/// the value, up to past an ATT MTU of 517. Properties:
/// - a value that does not decode is a `GATTValueError`, never a trap;
/// - a decoded value encodes to bytes that decode to the same value, and prints.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let selector = input.u8()
    let value = input.rest()
    switch selector % 17 {
    case 0: roundTrip(UInt8.self, value)
    case 1: roundTrip(UInt16.self, value)
    case 2: roundTrip(UInt32.self, value)
    case 3: roundTrip(UInt64.self, value)
    case 4: roundTrip(Int8.self, value)
    case 5: roundTrip(Int16.self, value)
    case 6: roundTrip(Int32.self, value)
    case 7: roundTrip([UInt8].self, value)
    case 8: roundTrip(String.self, value)
    case 9: roundTrip(HeartRateMeasurement.self, value)
    case 10: roundTrip(BatteryLevel.self, value)
    case 11: roundTrip(BodySensorLocation.self, value)
    case 12: roundTrip(GATTDateTime.self, value)
    case 13: roundTrip(TemperatureMeasurement.self, value)
    case 14: roundTrip(CurrentTime.self, value)
    case 15: roundTrip(PnPID.self, value)
    default: roundTrip(Appearance.self, value)
    }
    return 0
}

func roundTrip<T: GATTDecodable & GATTEncodable & Equatable>(_ type: T.Type, _ bytes: [UInt8]) {
    let decoded: T
    do { decoded = try T(gattValue: bytes) } catch { return }
    _ = "\(decoded)"
    let encoded = decoded.gattValue
    switch Result(catching: { () throws(GATTValueError) in try T(gattValue: encoded) }) {
    case .success(let again): fuzzCheck(again == decoded, "\(T.self): \(decoded) encodes to \(encoded), which decodes to \(again)")
    case .failure(let error): fuzzCheck(false, "\(T.self): \(decoded) encodes to \(encoded), which does not decode: \(error)")
    }
}

#else
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt { 0 }
#endif
