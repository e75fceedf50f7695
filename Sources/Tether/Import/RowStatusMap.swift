/// A small byte of import status per row id of one entity, for the whole of a big import.
///
/// Row ids are grouped in pages of 32; a page holds one bit per row for each of the status bits
/// ``ImportSession`` uses (present, its two status bits, listed at top level), so consecutive row
/// ids cost about one byte each, and a lone row id one dictionary entry of 24 bytes.
struct RowStatusMap {
    private struct Page {
        var present: UInt32 = 0
        var bit0: UInt32 = 0
        var bit1: UInt32 = 0
        var bit7: UInt32 = 0
    }

    private var pages: [Int64: Page] = [:]

    /// The byte stored for `row`: bits 0, 1 and 7 only.
    subscript(row: Int64) -> UInt8? {
        get {
            guard let page = pages[row >> 5] else { return nil }
            let mask = UInt32(1) << UInt32(row & 31)
            guard page.present & mask != 0 else { return nil }
            return (page.bit0 & mask != 0 ? 1 : 0) | (page.bit1 & mask != 0 ? 2 : 0) | (page.bit7 & mask != 0 ? 0x80 : 0)
        }
        set {
            let mask = UInt32(1) << UInt32(row & 31)
            guard let value = newValue else {
                guard var page = pages[row >> 5] else { return }
                page.present &= ~mask
                pages[row >> 5] = page.present == 0 ? nil : page
                return
            }
            precondition(value & 0x7C == 0, "RowStatusMap keeps bits 0, 1 and 7 only")
            Self.store(value, mask, in: &pages[row >> 5, default: Page()])
        }
    }

    private static func store(_ value: UInt8, _ mask: UInt32, in page: inout Page) {
        func set(_ word: inout UInt32, _ on: Bool) { if on { word |= mask } else { word &= ~mask } }
        page.present |= mask
        set(&page.bit0, value & 1 != 0)
        set(&page.bit1, value & 2 != 0)
        set(&page.bit7, value & 0x80 != 0)
    }
}
