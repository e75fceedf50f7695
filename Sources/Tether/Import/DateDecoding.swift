public import Foundation
import Synchronization

/// How date attributes are read from JSON: a list of formats tried in order.
///
/// ```swift
/// builder.dateDecoding(DateDecoding([.iso8601, .format("yyyy-MM-dd HH:mm"), .secondsSince1970]))
/// ```
public struct DateDecoding: Sendable, Hashable {
    /// The formats, in order: reading takes the first that accepts a value; writing uses the
    /// first that writes (``json(from:)``).
    public var formats: [DateFormat]

    /// Formats tried in this order; a value no format reads is rejected and reported as a
    /// diagnostic (`.invalidValue`).
    public init(_ formats: [DateFormat]) { self.formats = formats }

    /// ISO 8601 (with or without fractional seconds) for strings, Unix seconds for numbers.
    public static let `default` = DateDecoding([.iso8601, .secondsSince1970])

    /// The date for a JSON value, or nil when no format accepts it.
    public func date(from json: JSON) -> Date? {
        for format in formats {
            if let date = format.date(from: json) { return date }
        }
        return nil
    }

    /// The dates Tether stores and sends: 0001-01-01T00:00:00Z up to 9999-12-31T23:59:59.999Z,
    /// the years ISO 8601 writes with four digits. An import rejects a date outside it (a
    /// diagnostic), so that every stored date can be written back.
    public static let representableRange: ClosedRange<Date> =
        Date(timeIntervalSince1970: -62_135_596_800)...Date(timeIntervalSince1970: 253_402_300_799.999)

    /// The JSON form of a date for request bodies: by the first format that writes, else Unix seconds.
    /// A date outside ``representableRange`` (one stored by other means than an import) is
    /// written as Unix seconds, or null when it is not finite; writing never traps.
    public func json(from date: Date) -> JSON {
        // (A NaN date is "contained" by a closed range: its comparisons are all false.)
        guard date.timeIntervalSinceReferenceDate.isFinite, Self.representableRange.contains(date) else {
            let seconds = date.timeIntervalSince1970
            return seconds.isFinite ? .double(seconds) : .null
        }
        for format in formats {
            if let json = format.json(from: date) { return json }
        }
        return .double(date.timeIntervalSince1970)
    }
}

/// One way to write a date in JSON.
///
/// Two formats are equal when they are the same built-in format with the same parameters
/// (`.format("yyyy-MM-dd")` twice), or copies of one format made with ``init(parse:write:)`` or
/// ``custom(_:)``.
public struct DateFormat: Sendable, Hashable {
    private let parse: @Sendable (JSON) -> Date?
    private let write: @Sendable (Date) -> JSON?
    /// Parses strings with ``ISO8601`` and nothing else: the import reads such dates straight from the bytes.
    let isISO8601: Bool
    /// What the format is: a built-in one's name and parameters, or a new identifier for one of your own.
    private let identifier: String

    /// Whether two formats are the same format (see the type's summary).
    public static func == (lhs: DateFormat, rhs: DateFormat) -> Bool { lhs.identifier == rhs.identifier }
    /// Hashes what the format is, as `==` compares it.
    public func hash(into hasher: inout Hasher) { hasher.combine(identifier) }

    /// A format of your own: `parse` reads a JSON value (nil when it is not of this format), and
    /// `write` gives a date's JSON for request bodies (nil by default: a later format, or Unix
    /// seconds, writes it). Both run on an import's mapping thread and must be deterministic.
    ///
    /// ```swift
    /// // "/Date(1295942472000)/", as old ASP.NET services write dates
    /// let aspNet = DateFormat(parse: { json in
    ///     guard let text = json.stringValue, text.hasPrefix("/Date("), let ms = Double(text.dropFirst(6).prefix { $0.isNumber }) else { return nil }
    ///     return Date(timeIntervalSince1970: ms / 1000)
    /// })
    /// ```
    public init(parse: @escaping @Sendable (JSON) -> Date?, write: @escaping @Sendable (Date) -> JSON? = { _ in nil }) {
        self.init(parse: parse, write: write, isISO8601: false, identifier: "custom " + UUID().uuidString)
    }

    init(parse: @escaping @Sendable (JSON) -> Date?, write: @escaping @Sendable (Date) -> JSON?, isISO8601: Bool, identifier: String) {
        self.parse = parse
        self.write = write
        self.isISO8601 = isISO8601
        self.identifier = identifier
    }

    /// A number of seconds or milliseconds: an integer when it is whole (and exact), else a double.
    private static func number(_ value: Double) -> JSON {
        if value.rounded() == value, abs(value) < 9.0e15 { return .int(Int64(value)) }
        return .double(value)
    }

    /// The date this format reads from `json`, or nil when `json` is not written in it.
    public func date(from json: JSON) -> Date? { parse(json) }
    /// The JSON this format writes for `date`, or nil when it does not write dates (``custom(_:)``
    /// and formats made without `write` only read).
    public func json(from date: Date) -> JSON? { write(date) }

    /// ISO 8601 / RFC 3339 date-times such as `2011-01-26T19:01:12Z`, `2011-01-26T19:01:12.123Z`
    /// and `2011-01-26T19:01:12+02:00`, and plain dates `2011-01-26` (midnight UTC). Writes UTC with
    /// whole seconds, or with milliseconds or microseconds when the date has a fraction.
    public static let iso8601 = DateFormat(
        parse: { json in json.stringValue.flatMap(ISO8601.parse) },
        write: { .string(ISO8601.format($0, fractionalSeconds: false)) }, isISO8601: true, identifier: "iso8601")

    /// ISO 8601 written with milliseconds (`2011-01-26T19:01:12.000Z`); reads the same inputs as ``iso8601``.
    public static let iso8601WithFractionalSeconds = DateFormat(
        parse: { json in json.stringValue.flatMap(ISO8601.parse) },
        write: { .string(ISO8601.format($0, fractionalSeconds: true)) }, isISO8601: true, identifier: "iso8601WithFractionalSeconds")

    /// Numbers as seconds since 1970-01-01 UTC; writes an integer when the date has no fraction
    /// of a second (Stripe's `created`), else a double.
    public static let secondsSince1970 = DateFormat(
        parse: { json in json.doubleValue.map { Date(timeIntervalSince1970: $0) } },
        write: { date in number(date.timeIntervalSince1970) }, isISO8601: false,
        identifier: "secondsSince1970")

    /// Numbers as milliseconds since 1970-01-01 UTC; writes an integer when the date has no
    /// fraction of a millisecond, else a double.
    public static let millisecondsSince1970 = DateFormat(
        parse: { json in json.doubleValue.map { Date(timeIntervalSince1970: $0 / 1000) } },
        write: { date in number(date.timeIntervalSince1970 * 1000) }, isISO8601: false,
        identifier: "millisecondsSince1970")

    /// A `DateFormatter` pattern such as `yyyy-MM-dd HH:mm:ss`, in the POSIX locale, in `timeZone` (UTC by default).
    public static func format(_ pattern: String, timeZone: TimeZone = TimeZone(identifier: "UTC")!) -> DateFormat {
        let formatter = Mutex<DateFormatter>({
            let f = DateFormatter()
            f.locale = Locale(identifier: "en_US_POSIX")
            f.timeZone = timeZone
            f.dateFormat = pattern
            return f
        }())
        let box = FormatterBox(formatter)
        return DateFormat(
            parse: { json in json.stringValue.flatMap { s in box.mutex.withLock { $0.date(from: s) } } },
            write: { date in .string(box.mutex.withLock { $0.string(from: date) }) }, isISO8601: false,
            identifier: "format \(timeZone.identifier) \(pattern)")
    }

    /// Any conversion of your own.
    public static func custom(_ parse: @escaping @Sendable (JSON) -> Date?) -> DateFormat {
        DateFormat(parse: parse)
    }
}

private final class FormatterBox: Sendable {
    let mutex: Mutex<DateFormatter>
    init(_ mutex: consuming Mutex<DateFormatter>) { self.mutex = mutex }
}

/// A fast, allocation-free ISO 8601 reader and writer (UTC).
enum ISO8601 {
    static func parse(_ string: String) -> Date? {
        var string = string
        return string.withUTF8 { parse(bytes: $0) }
    }

    static func parse(bytes b: UnsafeBufferPointer<UInt8>) -> Date? {
        let n = b.count
        var i = 0
        func digits(_ count: Int) -> Int? {
            guard i + count <= n else { return nil }
            var value = 0
            for _ in 0..<count {
                let d = Int(b[i]) &- 48
                guard d >= 0 && d <= 9 else { return nil }
                value = value * 10 + d
                i += 1
            }
            return value
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < n, b[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect(UInt8(ascii: "-")), let month = digits(2), expect(UInt8(ascii: "-")),
            let day = digits(2), (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year)
        else { return nil }
        var seconds = Double(daysFromCivil(year: year, month: month, day: day)) * 86_400
        if i == n { return Date(timeIntervalSince1970: seconds) }
        guard i < n, b[i] == UInt8(ascii: "T") || b[i] == UInt8(ascii: "t") || b[i] == UInt8(ascii: " ") else { return nil }
        i += 1
        guard let hour = digits(2), expect(UInt8(ascii: ":")), let minute = digits(2), expect(UInt8(ascii: ":")),
            let second = digits(2), hour < 24, minute < 60, second <= 60
        else { return nil }
        seconds += Double(hour * 3600 + minute * 60 + second)
        if i < n, b[i] == UInt8(ascii: ".") || b[i] == UInt8(ascii: ",") {
            i += 1
            var fraction = 0.0
            var scale = 0.1
            var count = 0
            while i < n, b[i] >= 48, b[i] <= 57 {
                fraction += Double(b[i] - 48) * scale
                scale /= 10
                i += 1
                count += 1
            }
            guard count > 0 else { return nil }
            seconds += fraction
        }
        guard i < n else { return nil }  // a zone designator is required
        switch b[i] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            i += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign: Double = b[i] == UInt8(ascii: "+") ? 1 : -1
            i += 1
            guard let oh = digits(2) else { return nil }
            _ = expect(UInt8(ascii: ":"))
            let om = i < n ? (digits(2) ?? -1) : 0
            guard om >= 0, oh < 24, om < 60 else { return nil }
            seconds -= sign * Double(oh * 3600 + om * 60)
        default:
            return nil
        }
        guard i == n else { return nil }
        return Date(timeIntervalSince1970: seconds)
    }

    /// Writes `date` in UTC. Years outside 1...9999 are written in the expanded form (`+10000-…`,
    /// `-0001-…`) as far as whole seconds fit in 64 bits; a date beyond that (or not finite) is
    /// written as its number of seconds. Never traps.
    static func format(_ date: Date, fractionalSeconds: Bool) -> String {
        let t = date.timeIntervalSince1970
        guard t.isFinite, abs(t) < 9.0e15 else { return "\(t)" }
        var whole = t.rounded(.down)
        var micros = Int(((t - whole) * 1_000_000).rounded())
        if micros == 1_000_000 { whole += 1; micros = 0 }
        let total = Int64(whole)
        var days = total / 86_400
        var rem = total % 86_400
        if rem < 0 { rem += 86_400; days -= 1 }
        let (y, m, d) = civilFromDays(Int(days))
        func pad(_ v: Int, _ w: Int) -> String {
            let s = String(v)
            return s.count >= w ? s : String(repeating: "0", count: w - s.count) + s
        }
        let year = y < 0 ? "-" + pad(-y, 4) : y > 9999 ? "+" + pad(y, 4) : pad(y, 4)
        var s = "\(year)-\(pad(m, 2))-\(pad(d, 2))T\(pad(Int(rem / 3600), 2)):\(pad(Int(rem % 3600 / 60), 2)):\(pad(Int(rem % 60), 2))"
        if fractionalSeconds || micros != 0 {
            // Milliseconds, or microseconds when the date has them (DRF writes microseconds).
            s += micros % 1000 == 0 ? ".\(pad(micros / 1000, 3))" : ".\(pad(micros, 6))"
        }
        return s + "Z"
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ z: Int) -> (Int, Int, Int) {
        let z = z + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }
}
