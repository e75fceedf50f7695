import Foundation

// The English rules below (`Inflector.english`) are ported from Ruby on Rails' ActiveSupport
// (activesupport/lib/active_support/inflections.rb), which is released under the MIT license:
//
//   Copyright (c) David Heinemeier Hansson
//
//   Permission is hereby granted, free of charge, to any person obtaining a copy of this software
//   and associated documentation files (the "Software"), to deal in the Software without
//   restriction, including without limitation the rights to use, copy, modify, merge, publish,
//   distribute, sublicense, and/or sell copies of the Software, and to permit persons to whom the
//   Software is furnished to do so, subject to the following conditions:
//
//   The above copyright notice and this permission notice shall be included in all copies or
//   substantial portions of the Software.
//
//   THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING
//   BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
//   NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM,
//   DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
//   OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.

/// English plurals and singulars, the ActiveSupport way: a list of suffix rules, irregular words
/// and uncountable words.
///
/// An inflector is a value: start from ``english`` and add your own rules, without touching any
/// global state.
///
/// ```swift
/// Inflector.english.pluralize("person")        // "people"
/// Inflector.english.pluralize("pull_request")  // "pull_requests"
/// Inflector.english.singularize("categories")  // "category"
///
/// var inflector = Inflector.english
/// try inflector.irregular("cactus", "cacti")
/// inflector.uncountable("feedback")
/// ```
///
/// Rules are tried from the most recently added to the oldest; the first one that matches wins
/// (as in ActiveSupport). Uncountable words are checked first, against the whole word or its
/// last `_`- or space-separated part (`bulk_equipment` stays `bulk_equipment`).
public struct Inflector: Sendable, Hashable {
    /// A suffix rule: an `NSRegularExpression` pattern (matched case-insensitively) and its
    /// replacement template (`$1` refers to the first capture group).
    public struct Rule: Sendable, Hashable {
        /// The regular expression a word must match, usually anchored at its end (`(x|ch|ss|sh)$`).
        public let pattern: String
        /// What replaces the match: a template where `$1` is the first capture group (`$1es`).
        public let replacement: String
    }

    /// Plural rules, oldest first.
    public private(set) var plurals: [Rule] = []
    /// Singular rules, oldest first.
    public private(set) var singulars: [Rule] = []
    /// Words (lower-cased) that have no plural form.
    public private(set) var uncountables: Set<String> = []

    /// An inflector with no rules at all: every word is its own plural.
    public init() {}

    /// Adds a plural rule, tried before every rule added earlier.
    ///
    /// - Parameters:
    ///   - pattern: a regular expression, matched case-insensitively (`"([^aeiouy]|qu)y$"`).
    ///   - replacement: the replacement template (`"$1ies"`).
    /// - Throws: ``InflectorError`` when the pattern is not a valid regular expression.
    public mutating func plural(_ pattern: String, _ replacement: String) throws(InflectorError) {
        try Self.check(pattern)
        plurals.append(Rule(pattern: pattern, replacement: replacement))
    }

    /// Adds a singular rule, tried before every rule added earlier.
    /// - Throws: ``InflectorError`` when the pattern is not a valid regular expression.
    public mutating func singular(_ pattern: String, _ replacement: String) throws(InflectorError) {
        try Self.check(pattern)
        singulars.append(Rule(pattern: pattern, replacement: replacement))
    }

    /// Declares an irregular pair (`person`/`people`). Like ActiveSupport, the pair also applies
    /// at the end of longer words (`salesperson` -> `salespeople`), and keeps the case of the
    /// first letter (`Person` -> `People`).
    /// - Throws: ``InflectorError`` when a word is empty or contains a character other than a
    ///   letter or a digit.
    public mutating func irregular(_ singular: String, _ plural: String) throws(InflectorError) {
        for word in [singular, plural] where word.isEmpty || !word.allSatisfy({ $0.isLetter || $0.isNumber }) {
            throw InflectorError(pattern: word, message: "an irregular word must be made of letters and digits: '\(word)'")
        }
        addIrregular(singular, plural)
    }

    private mutating func addIrregular(_ singular: String, _ plural: String) {
        uncountables.remove(singular.lowercased())
        uncountables.remove(plural.lowercased())
        let s0 = singular.prefix(1), sRest = singular.dropFirst()
        let p0 = plural.prefix(1), pRest = plural.dropFirst()
        if s0.lowercased() == p0.lowercased() {
            append(plural: "(\(s0))\(sRest)$", "$1\(pRest)")
            append(plural: "(\(p0))\(pRest)$", "$1\(pRest)")
            append(singular: "(\(s0))\(sRest)$", "$1\(sRest)")
            append(singular: "(\(p0))\(pRest)$", "$1\(sRest)")
        } else {
            // Different first letters (`cow`/`kine`): the first letter is matched case-sensitively
            // so that its case can be carried over.
            func rules(from word: String, to target: String) -> [(String, String)] {
                let rest = word.dropFirst(), targetRest = target.dropFirst()
                return [
                    ("(?-i:\(word.prefix(1).uppercased()))\(rest)$", target.prefix(1).uppercased() + targetRest),
                    ("(?-i:\(word.prefix(1).lowercased()))\(rest)$", target.prefix(1).lowercased() + targetRest),
                ]
            }
            for (pattern, replacement) in rules(from: singular, to: plural) + rules(from: plural, to: plural) {
                append(plural: pattern, replacement)
            }
            for (pattern, replacement) in rules(from: plural, to: singular) + rules(from: singular, to: singular) {
                append(singular: pattern, replacement)
            }
        }
    }

    /// Declares words that are their own plural (`equipment`, `sheep`).
    public mutating func uncountable(_ words: String...) {
        for word in words { uncountables.insert(word.lowercased()) }
    }

    /// The plural of `word` (`issue` -> `issues`, `person` -> `people`, `pull_request` -> `pull_requests`).
    public func pluralize(_ word: String) -> String { apply(plurals, to: word) }

    /// The singular of `word` (`issues` -> `issue`, `people` -> `person`, `statuses` -> `status`).
    public func singularize(_ word: String) -> String { apply(singulars, to: word) }

    /// True when `word` (or its last `_`- or space-separated part) is uncountable.
    public func isUncountable(_ word: String) -> Bool {
        let last = word.split(whereSeparator: { $0 == "_" || $0 == " " }).last.map(String.init) ?? word
        return uncountables.contains(last.lowercased())
    }

    private func apply(_ rules: [Rule], to word: String) -> String {
        if word.isEmpty || isUncountable(word) { return word }
        let range = NSRange(word.startIndex..., in: word)
        for rule in rules.reversed() {
            guard let regex = try? NSRegularExpression(pattern: rule.pattern, options: [.caseInsensitive]),
                let match = regex.firstMatch(in: word, options: [], range: range)
            else { continue }
            let replacement = regex.replacementString(for: match, in: word, offset: 0, template: rule.replacement)
            return (word as NSString).replacingCharacters(in: match.range, with: replacement)
        }
        return word
    }

    private mutating func append(plural pattern: String, _ replacement: String) {
        plurals.append(Rule(pattern: pattern, replacement: replacement))
    }

    private mutating func append(singular pattern: String, _ replacement: String) {
        singulars.append(Rule(pattern: pattern, replacement: replacement))
    }

    private static func check(_ pattern: String) throws(InflectorError) {
        do {
            _ = try NSRegularExpression(pattern: pattern, options: [.caseInsensitive])
        } catch {
            throw InflectorError(pattern: pattern, message: "'\(pattern)' is not a valid regular expression")
        }
    }
}

/// A rule that cannot be added to an ``Inflector``.
public struct InflectorError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The pattern or word at fault.
    public let pattern: String
    /// Why the rule was refused, with the pattern or word quoted.
    public let message: String
    public var description: String { "inflector error: \(message)" }
}

extension Inflector {
    /// The English rules of ActiveSupport: regular plurals (`issue` -> `issues`, `category` ->
    /// `categories`, `status` -> `statuses`, `box` -> `boxes`), irregulars (`person`/`people`,
    /// `man`/`men`, `child`/`children`, `sex`/`sexes`, `move`/`moves`, `zombie`/`zombies`) and
    /// uncountables (`equipment`, `information`, `rice`, `money`, `species`, `series`, `fish`,
    /// `sheep`, `jeans`, `police`).
    public static let english: Inflector = {
        var inflector = Inflector()
        let plurals: [(String, String)] = [
            ("$", "s"),
            ("s$", "s"),
            ("^(ax|test)is$", "$1es"),
            ("(octop|vir)us$", "$1i"),
            ("(octop|vir)i$", "$1i"),
            ("(alias|status)$", "$1es"),
            ("(bu)s$", "$1ses"),
            ("(buffal|tomat)o$", "$1oes"),
            ("([ti])um$", "$1a"),
            ("([ti])a$", "$1a"),
            ("sis$", "ses"),
            ("(?:([^f])fe|([lr])f)$", "$1$2ves"),
            ("(hive)$", "$1s"),
            ("([^aeiouy]|qu)y$", "$1ies"),
            ("(x|ch|ss|sh)$", "$1es"),
            ("(matr|vert|ind)(?:ix|ex)$", "$1ices"),
            ("^(m|l)ouse$", "$1ice"),
            ("^(m|l)ice$", "$1ice"),
            ("^(ox)$", "$1en"),
            ("^(oxen)$", "$1"),
            ("(quiz)$", "$1zes"),
        ]
        let singulars: [(String, String)] = [
            ("s$", ""),
            ("(ss)$", "$1"),
            ("(n)ews$", "$1ews"),
            ("([ti])a$", "$1um"),
            ("((a)naly|(b)a|(d)iagno|(p)arenthe|(p)rogno|(s)ynop|(t)he)(sis|ses)$", "$1sis"),
            ("(^analy)(sis|ses)$", "$1sis"),
            ("([^f])ves$", "$1fe"),
            ("(hive)s$", "$1"),
            ("(tive)s$", "$1"),
            ("([lr])ves$", "$1f"),
            ("([^aeiouy]|qu)ies$", "$1y"),
            ("(s)eries$", "$1eries"),
            ("(m)ovies$", "$1ovie"),
            ("(x|ch|ss|sh)es$", "$1"),
            ("^(m|l)ice$", "$1ouse"),
            ("(bus)(es)?$", "$1"),
            ("(o)es$", "$1"),
            ("(shoe)s$", "$1"),
            ("(cris|test)(is|es)$", "$1is"),
            ("^(a)x[ie]s$", "$1xis"),
            ("(octop|vir)(us|i)$", "$1us"),
            ("(alias|status)(es)?$", "$1"),
            ("^(ox)en", "$1"),
            ("(vert|ind)ices$", "$1ex"),
            ("(matr)ices$", "$1ix"),
            ("(quiz)zes$", "$1"),
            ("(database)s$", "$1"),
        ]
        for (pattern, replacement) in plurals { inflector.append(plural: pattern, replacement) }
        for (pattern, replacement) in singulars { inflector.append(singular: pattern, replacement) }
        let irregulars = [
            ("person", "people"), ("man", "men"), ("child", "children"), ("sex", "sexes"), ("move", "moves"),
            ("zombie", "zombies"),
        ]
        for (singular, plural) in irregulars { inflector.addIrregular(singular, plural) }
        inflector.uncountable(
            "equipment", "information", "rice", "money", "species", "series", "fish", "sheep", "jeans", "police")
        return inflector
    }()
}
