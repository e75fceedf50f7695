/// A set of rowids as bits, in pages of 4,096 rowids found by their number: rowids are mostly
/// dense, so that 100,000 rows of a table are a few dozen pages, asked without hashing each row.
struct RowBits {
    private static let wordsPerPage = 64
    /// Each page's first word in `words`, by page number (rowid >> 12).
    private var pages: [Int64: Int] = [:]
    private var words: [UInt64] = []

    /// The page a run of lookups found last: neighbouring rowids share it, and skip the hash.
    struct Cursor {
        var page: Int64 = .min
        var base: Int?
    }

    /// What ``insert(_:pageLimit:_:)`` did.
    enum Insertion {
        case inserted, present
        /// Nothing: the row needs a page past the limit.
        case full
    }

    func contains(_ row: Int64, _ cursor: inout Cursor) -> Bool {
        let page = row >> 12
        if page != cursor.page {
            cursor = Cursor(page: page, base: pages[page])
        }
        guard let base = cursor.base else { return false }
        let bit = Int(row & 4095)
        return words[base + bit >> 6] & (1 << UInt64(bit & 63)) != 0
    }

    /// Adds `row`, unless it needs a page past `pageLimit`.
    @discardableResult
    mutating func insert(_ row: Int64, pageLimit: Int, _ cursor: inout Cursor) -> Insertion {
        let page = row >> 12
        if page != cursor.page {
            cursor = Cursor(page: page, base: pages[page])
        }
        let base: Int
        if let known = cursor.base {
            base = known
        } else {
            guard pages.count < pageLimit else { return .full }
            base = words.count
            pages[page] = base
            words.append(contentsOf: repeatElement(0, count: Self.wordsPerPage))
            cursor.base = base
        }
        let bit = Int(row & 4095)
        let mask: UInt64 = 1 << UInt64(bit & 63)
        if words[base + bit >> 6] & mask != 0 { return .present }
        words[base + bit >> 6] |= mask
        return .inserted
    }
}

/// The distinct rowids a link batch meets as it goes (its sources, its targets, the targets
/// whose links change): bits for the rowids of its first ``pageLimit`` pages, a hashed set for
/// the others, so that dense rowids are not hashed and scattered ones cost what a hashed set does.
struct RowSet {
    static let pageLimit = 64
    private var bits = RowBits()
    private var overflow = Set<Int64>()
    private var cursor = RowBits.Cursor()

    /// Adds `row`; whether it was not in the set yet.
    mutating func insert(_ row: Int64) -> Bool {
        switch bits.insert(row, pageLimit: Self.pageLimit, &cursor) {
        case .inserted: true
        case .present: false
        case .full: overflow.insert(row).inserted
        }
    }

    func contains(_ row: Int64) -> Bool {
        var cursor = RowBits.Cursor()
        return bits.contains(row, &cursor) || overflow.contains(row)
    }
}
