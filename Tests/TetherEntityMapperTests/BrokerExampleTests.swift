import Foundation
import Testing
import Tether
import TetherEntityMapper

/// Broker's acceptance example: an `Employee` whose `employeeId` is the JSON `id`, with a nested
/// `department`, and a department whose JSON nests its `employees`
/// (`{"id", "name", "employees": [...]}`).
@Suite struct BrokerExampleTests {
    static func makeClient() throws -> Client {
        let schema = try Schema {
            Entity("Employee", identity: "employeeId") {
                Attribute("employeeId", .int64)
                Attribute("firstName", .string)
                Attribute("lastName", .string)
                Relationship.toOne("department", "Department", inverse: "employees")
            }
            Entity("Department", identity: "departmentId") {
                Attribute("departmentId", .int64)
                Attribute("name", .string)
                Relationship.toMany("employees", "Employee", inverse: "department")
            }
        }
        let mapper = EntityMapper {
            EntityMap("Employee", ["employeeId": "id"])
            EntityMap("Department", ["departmentId": "id"])
        }
        return try Client.Builder(schema: schema).keyMapping(mapper).build()
    }

    @Test func employeeWithNestedDepartment() async throws {
        let client = try Self.makeClient()
        let employee = try JSON(parsing: #"""
            {"id": 1, "firstName": "Andrew", "lastName": "Smith", "department": {"id": 7, "name": "Engineering"}}
            """#)
        let result = try await client.import(employee, as: "Employee")
        #expect(result.diagnostics.isEmpty)
        #expect(result.inserted.count == 2)
        let andrew = try #require(try await client.object("Employee", identity: .int(1)))
        #expect(andrew["employeeId"] == .int(1))
        #expect(andrew["firstName"] == .string("Andrew"))
        let department = try #require(try await client.related("department", of: andrew.id).first)
        #expect(department["departmentId"] == .int(7))
        #expect(department["name"] == .string("Engineering"))
        #expect(try await client.related("employees", of: department.id).map(\.id) == [andrew.id])
    }

    @Test func departmentWithNestedEmployees() async throws {
        let client = try Self.makeClient()
        _ = try await client.import(
            JSON(parsing: #"{"id": 1, "firstName": "Andrew", "lastName": "Smith", "department": {"id": 7, "name": "Eng"}}"#),
            as: "Employee")
        let department = try JSON(parsing: #"""
            {
              "id": 7,
              "name": "Engineering",
              "employees": [
                {"id": 1, "firstName": "Andrew", "lastName": "Smith-Jones"},
                {"id": 2, "firstName": "Grace", "lastName": "Hopper"},
                {"id": 3, "firstName": "Linus", "lastName": "Torvalds"}
              ]
            }
            """#)
        let result = try await client.import(department, as: "Department")
        #expect(result.diagnostics.isEmpty)
        #expect(result.inserted.count == 2)  // Grace and Linus; Andrew and the department exist
        #expect(try await client.count(Query("Employee")) == 3)
        #expect(try await client.count(Query("Department")) == 1)
        let engineering = try #require(try await client.object("Department", identity: .int(7)))
        #expect(engineering["name"] == .string("Engineering"))
        let staff = try await client.related("employees", of: engineering.id)
        #expect(Set(staff.compactMap { $0["employeeId", as: Int64.self] }) == [1, 2, 3])
        let andrew = try #require(try await client.object("Employee", identity: .int(1)))
        #expect(andrew["lastName"] == .string("Smith-Jones"))
        for member in staff {
            #expect(try await client.related("department", of: member.id).map(\.id) == [engineering.id])
        }

        // The same department again: nothing changes.
        let again = try await client.import(department, as: "Department")
        #expect(again.inserted.isEmpty && again.updated.isEmpty)
        #expect(again.unchanged.count == 4)
    }
}
