// BLECore is the umbrella of the layers under the central: `import BLECore` also brings the
// wire codecs (BLEWire) and the transports (BLETransport), so an application imports one
// module for HCI, L2CAP, advertising, transports and the central.
@_exported import BLEWire
@_exported import BLETransport
