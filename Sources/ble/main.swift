import BLECore
print("ble 0.1.0")
