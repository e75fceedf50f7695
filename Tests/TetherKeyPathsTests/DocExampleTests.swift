import Foundation
import Testing
import Tether
import TetherKeyPaths

// The example of Docs/Strategy-KeyPaths.md, compiled and run.
enum DocExample {
    struct Member: Sendable {
        var id: Int64
        var name = ""
        var email: String?
        var role: Role = .member
        var teams: [Team] = []
    }

    struct Team: KeyPathModel {
        var id: Int64 = 0
        var title = ""
        var createdAt: Date?
        var lead: Member?
    }

    enum Role: String, KeyPathValue { case admin, member }

    static let memberMapping: KeyPathMapping<Member> = KeyPathMapping("Member", identity: \.id, make: { Member(id: 0) }) {
        $0.map("id", to: \.id)
        $0.map("full_name", to: \.name, named: "name")
        $0.map("contact.email", to: \.email, named: "email")
        $0.map("role", to: \.role)
        $0.toMany("teams", \.teams, mapping: teamMapping, inverse: "lead")
    }

    static let teamMapping: KeyPathMapping<Team> = KeyPathMapping("Team", identity: \.id) {
        $0.map("id", to: \.id)
        $0.map("title", to: \.title)
        $0.map("created_at", to: \.createdAt, named: "createdAt")
        $0.toOne("lead", \.lead, mapping: memberMapping, foreignKey: "lead_id")
    }
}

@Test func keyPathsDocExample() async throws {
    typealias E = DocExample
    let client = try Client.Builder(models: [E.memberMapping, E.teamMapping]).build()

    let payload = Data(#"""
        [{"id": 1, "full_name": "Ada", "contact": {"email": "ada@example.com"},
          "teams": [{"id": 10, "title": "Engines", "created_at": "2024-01-02T03:04:05Z"}]},
         {"id": 2, "full_name": "Grace", "role": "admin"}]
        """#.utf8)
    let members: [E.Member] = try await client.import(payload, as: E.memberMapping)
    #expect(members.map(\.name) == ["Ada", "Grace"])
    #expect(members[0].email == "ada@example.com")
    #expect(members[0].teams.map(\.title) == ["Engines"])
    #expect(members[1].role == .admin)

    let teams = try await client.fetch(E.teamMapping, where: .hasPrefix(\.title, "Eng"), sortedBy: [.ascending(\.title)])
    #expect(teams.first?.lead?.name == "Ada")
    #expect(teams.first?.lead?.teams.isEmpty == true)   // depth 1

    let ada = try await client.model(E.memberMapping, identity: Int64(1))
    #expect(ada?.teams.count == 1)
}
