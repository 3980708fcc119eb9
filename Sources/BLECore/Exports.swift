// BLECore is the umbrella of the layers under the central: `import BLECore` also brings the
// wire codecs (BLEWire), so an application imports one module for HCI, L2CAP and advertising.
@_exported import BLEWire
