/// One reusable read buffer, freed with its owner: the reading state of a transport keeps it
/// on the queue that reads.
///
///     let buffer = ReadBuffer(byteCount: 65_536)
///     let n = read(fd, buffer.bytes.baseAddress, buffer.bytes.count)
package final class ReadBuffer {
    package let bytes: UnsafeMutableRawBufferPointer

    package init(byteCount: Int) {
        bytes = .allocate(byteCount: byteCount, alignment: 8)
    }

    deinit { bytes.deallocate() }
}
