import Testing
import TetherRails

@Suite struct InflectorTests {
    let inflector = Inflector.english

    static let pairs: [(singular: String, plural: String)] = [
        ("issue", "issues"), ("person", "people"), ("repository", "repositories"), ("category", "categories"),
        ("status", "statuses"), ("pull_request", "pull_requests"), ("label", "labels"), ("user", "users"),
        ("box", "boxes"), ("match", "matches"), ("wish", "wishes"), ("bus", "buses"), ("alias", "aliases"),
        ("query", "queries"), ("ability", "abilities"), ("day", "days"), ("half", "halves"), ("wife", "wives"),
        ("knife", "knives"), ("datum", "data"), ("medium", "media"), ("analysis", "analyses"),
        ("crisis", "crises"), ("basis", "bases"), ("octopus", "octopi"), ("virus", "viri"), ("axis", "axes"),
        ("testis", "testes"), ("matrix", "matrices"), ("vertex", "vertices"), ("index", "indices"),
        ("mouse", "mice"), ("louse", "lice"), ("ox", "oxen"), ("quiz", "quizzes"), ("tomato", "tomatoes"),
        ("buffalo", "buffaloes"), ("hive", "hives"), ("child", "children"), ("man", "men"), ("woman", "women"),
        ("spokesman", "spokesmen"), ("salesperson", "salespeople"), ("move", "moves"), ("sex", "sexes"),
        ("zombie", "zombies"), ("news", "news"), ("movie", "movies"), ("shoe", "shoes"), ("equipment", "equipment"),
        ("information", "information"), ("sheep", "sheep"), ("fish", "fish"), ("series", "series"),
        ("species", "species"), ("money", "money"), ("bulk_equipment", "bulk_equipment"), ("Person", "People"),
        ("Category", "Categories"), ("old_news", "old_news"), ("perspective", "perspectives"),
        ("commit_status", "commit_statuses"), ("release_asset", "release_assets"),
    ]

    @Test(arguments: pairs)
    func pluralizes(_ pair: (singular: String, plural: String)) {
        #expect(inflector.pluralize(pair.singular) == pair.plural)
    }

    @Test(arguments: pairs)
    func singularizes(_ pair: (singular: String, plural: String)) {
        #expect(inflector.singularize(pair.plural) == pair.singular)
    }

    @Test(arguments: ["issues", "people", "categories", "statuses", "children", "data", "news", "sheep"])
    func pluralOfAPluralIsItself(_ plural: String) {
        #expect(inflector.pluralize(plural) == plural)
    }

    @Test(arguments: ["issue", "person", "category", "status", "child", "datum", "sheep", "analysis"])
    func singularOfASingularIsItself(_ singular: String) {
        #expect(inflector.singularize(singular) == singular)
    }

    @Test func emptyWordStaysEmpty() {
        #expect(inflector.pluralize("") == "")
        #expect(inflector.singularize("") == "")
    }

    @Test func customRulesAreValuesAndWinOverBuiltIns() throws {
        var custom = Inflector.english
        try custom.irregular("cactus", "cacti")
        custom.uncountable("feedback")
        try custom.plural("(ss)$", "$1ae")
        #expect(custom.pluralize("cactus") == "cacti")
        #expect(custom.singularize("cacti") == "cactus")
        #expect(custom.pluralize("feedback") == "feedback")
        #expect(custom.pluralize("boss") == "bossae")
        // The shared English rules are untouched.
        #expect(inflector.pluralize("cactus") == "cactus")  // ActiveSupport: words ending in s are kept
        #expect(inflector.pluralize("feedback") == "feedbacks")
        #expect(inflector.pluralize("boss") == "bosses")
    }

    @Test func irregularWithDifferentFirstLettersKeepsCase() throws {
        var custom = Inflector.english
        try custom.irregular("cow", "kine")
        #expect(custom.pluralize("cow") == "kine")
        #expect(custom.pluralize("Cow") == "Kine")
        #expect(custom.singularize("kine") == "cow")
        #expect(custom.singularize("Kine") == "Cow")
        #expect(custom.pluralize("kine") == "kine")
    }

    @Test func irregularRemovesAnUncountable() throws {
        var custom = Inflector.english
        #expect(custom.isUncountable("fish"))
        try custom.irregular("fish", "fishes")
        #expect(!custom.isUncountable("fish"))
        #expect(custom.pluralize("fish") == "fishes")
    }

    @Test func invalidRulesAreRejected() {
        var custom = Inflector()
        #expect(throws: InflectorError.self) { try custom.plural("(unclosed", "x") }
        #expect(throws: InflectorError.self) { try custom.singular("[a-", "x") }
        #expect(throws: InflectorError.self) { try custom.irregular("two words", "x") }
        #expect(throws: InflectorError.self) { try custom.irregular("", "x") }
        #expect(custom.plurals.isEmpty && custom.singulars.isEmpty)
    }

    @Test func anEmptyInflectorChangesNothing() {
        let none = Inflector()
        #expect(none.pluralize("issue") == "issue")
        #expect(none.singularize("issues") == "issues")
    }
}
