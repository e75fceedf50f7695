/// camelCase <-> snake_case conversion, with optional word conventions. ``RailsNaming`` is built
/// on it, and custom conventions can reuse it (a kebab-case naming is `snakeCase` with `-`).
///
/// ```swift
/// CaseConversion.words(in: "avatarURLString")   // ["avatar", "URL", "String"]
/// CaseConversion.snakeCase("createdAt")         // "created_at"
/// CaseConversion.camelCase("created_at")        // "createdAt"
/// ```
///
/// Leading and trailing underscores are kept as they are (`_links` <-> `_links`).
public enum CaseConversion {
    /// The words of a camelCase (or PascalCase) name. A run of capitals is one word (an acronym),
    /// except that its last capital starts the next word when a lower-case letter follows
    /// (`URLString` -> `URL`, `String`). Digits stay with the word before them (`sha256Hash` ->
    /// `sha256`, `Hash`). Underscores separate words and are dropped.
    public static func words(in name: String) -> [String] {
        let chars = Array(name)
        var words: [String] = []
        var i = 0
        while i < chars.count {
            if chars[i] == "_" {
                i += 1
                continue
            }
            let end = naturalWordEnd(chars, from: i)
            words.append(String(chars[i..<end]))
            i = end
        }
        return words
    }

    /// `createdAt` -> `created_at`, `avatarURL` -> `avatar_url`; with a convention `identifier`
    /// <-> `id`, `gravatarIdentifier` -> `gravatar_id`.
    public static func snakeCase(_ name: String, conventions: [RailsNaming.Convention] = []) -> String {
        let (lead, core, trail) = splitUnderscores(name)
        let chars = Array(core)
        var words: [String] = []
        var i = 0
        while i < chars.count {
            if chars[i] == "_" {
                i += 1
                continue
            }
            let leading = words.isEmpty
            if let convention = matchModelWord(conventions, chars, at: i, leading: leading) {
                words.append(convention.jsonWord)
                i += (leading ? convention.leadingForm : convention.innerForm).count
                continue
            }
            let end = naturalWordEnd(chars, from: i)
            words.append(String(chars[i..<end]).lowercased())
            i = end
        }
        return lead + words.joined(separator: "_") + trail
    }

    /// `created_at` -> `createdAt`; with conventions `identifier` <-> `id` and `URL` <-> `url`,
    /// `gravatar_id` -> `gravatarIdentifier`, `html_url` -> `htmlURL` and `url` -> `url`.
    public static func camelCase(_ key: String, conventions: [RailsNaming.Convention] = []) -> String {
        let (lead, core, trail) = splitUnderscores(key)
        let words = core.split(separator: "_", omittingEmptySubsequences: false)
        var result = ""
        var leading = true
        var i = 0
        while i < words.count {
            let word = words[i]
            if word.isEmpty {
                // A doubled underscore: keep one, it cannot be expressed in camelCase.
                result += "_"
                i += 1
                continue
            }
            if let (convention, count) = matchJSONWords(conventions, words, at: i) {
                result += leading ? convention.leadingForm : convention.innerForm
                i += count
            } else {
                result += leading ? String(word) : word.prefix(1).uppercased() + word.dropFirst()
                i += 1
            }
            leading = false
        }
        return lead + result + trail
    }

    // MARK: Helpers

    private static func splitUnderscores(_ text: String) -> (String, Substring, String) {
        guard let first = text.firstIndex(where: { $0 != "_" }), let last = text.lastIndex(where: { $0 != "_" }) else {
            return (text, "", "")
        }
        return (String(text[..<first]), text[first...last], String(text[text.index(after: last)...]))
    }

    /// Where the word starting at `start` ends, without conventions.
    private static func naturalWordEnd(_ chars: [Character], from start: Int) -> Int {
        var j = start
        if chars[j].isUppercase {
            var k = j
            while k < chars.count && chars[k].isUppercase { k += 1 }
            if k - j == 1 {
                j = k
                while j < chars.count && (chars[j].isLowercase || chars[j].isNumber) { j += 1 }
            } else if k < chars.count && chars[k].isLowercase {
                j = k - 1
            } else {
                j = k
                while j < chars.count && chars[j].isNumber { j += 1 }
            }
        } else {
            while j < chars.count && !chars[j].isUppercase && chars[j] != "_" { j += 1 }
        }
        return j
    }

    /// The longest convention whose model word starts at `start` and ends at a word boundary.
    private static func matchModelWord(
        _ conventions: [RailsNaming.Convention], _ chars: [Character], at start: Int, leading: Bool
    ) -> RailsNaming.Convention? {
        var best: (RailsNaming.Convention, Int)?
        for convention in conventions {
            let form = Array(leading ? convention.leadingForm : convention.innerForm)
            let end = start + form.count
            guard !form.isEmpty, end <= chars.count, Array(chars[start..<end]) == form else { continue }
            guard end == chars.count || chars[end].isUppercase || chars[end] == "_" else { continue }
            if form.count > (best?.1 ?? 0) { best = (convention, form.count) }
        }
        return best?.0
    }

    /// The convention whose JSON words (most words first) start at word `start`.
    private static func matchJSONWords(
        _ conventions: [RailsNaming.Convention], _ words: [Substring], at start: Int
    ) -> (RailsNaming.Convention, Int)? {
        var best: (RailsNaming.Convention, Int)?
        for convention in conventions {
            let jsonWords = convention.jsonWords
            let end = start + jsonWords.count
            guard !jsonWords.isEmpty, end <= words.count, Array(words[start..<end]) == jsonWords else { continue }
            if jsonWords.count > (best?.1 ?? 0) { best = (convention, jsonWords.count) }
        }
        return best
    }
}
