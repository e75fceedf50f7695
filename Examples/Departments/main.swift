// Departments: Broker's example, told with Tether's typed models on the SQLite store. Broker
// registered each Core Data entity with its network-to-local property names
// (`registerEntityNamed:@"Employee" andMapNetworkProperties:@[@"id", @"first_name"]
// toLocalProperties:@[@"employeeID", @"firstname"]`) and found or created one object per key for
// every nested JSON object. Here each model's `describe` says the same (its identity and the
// JSON key of each renamed property), and an import finds or creates one object per key, nested
// objects included, with one store lookup per entity per batch.
//
// Two payloads (inline below, no server needed) meet in one SQLite file: employees with their
// department nested, then departments with their employees nested. The same department comes
// as `1234` and as `"1234"`, the same employees come back under their departments; each is still
// one object, updated in place (Grace moves to another department, a department is renamed).
// Importing the last payload again changes nothing; reopening the file finds everything.
//
//     swift run Departments [path/to/store.sqlite]      # default: a temporary file, removed at the end
//
// It prints where it writes; the temporary file (and its -wal and -shm files) is removed when the
// program ends, also after an error; a file you name is kept.

import Foundation
import Tether
import TetherSQLite

// MARK: The models, and Broker's network -> local property names

struct Department: EntityModel {
    var departmentID: Int64
    var name: String
    var employees: [Employee] = []

    static func describe(_ model: inout ModelDescription<Self>) {
        model.identity(\.departmentID)
        model.jsonKey(\.departmentID, "id")
    }
}

struct Employee: EntityModel {
    var employeeID: Int64
    var firstname: String
    var lastname: String
    var startDate: Date?
    var department: Department?

    static func describe(_ model: inout ModelDescription<Self>) {
        model.identity(\.employeeID)
        model.jsonKey(\.employeeID, "id")
        model.jsonKey(\.firstname, "first_name")
        model.jsonKey(\.lastname, "last_name")
        model.jsonKey(\.startDate, "start_date")
    }
}

// MARK: The payloads

/// Employees, each with its department nested (Engineering twice, once with a string id).
let employeesJSON = Data(#"""
    [{"id": 1, "first_name": "Ada", "last_name": "Lovelace", "start_date": "2011/10/06 00:51:10 -0700",
      "department": {"id": 1234, "name": "Engineering"}},
     {"id": 2, "first_name": "Grace", "last_name": "Hopper", "start_date": "2012/03/01 09:00:00 -0500",
      "department": {"id": "1234", "name": "Engineering"}},
     {"id": 3, "first_name": "Alan", "last_name": "Turing",
      "department": {"id": 99, "name": "Design"}}]
    """#.utf8)

/// Departments, each with its employees nested: Ada again, Katherine new, Grace moved to 99,
/// and department 99 renamed.
let departmentsJSON = Data(#"""
    [{"id": 1234, "name": "Engineering", "employees": [
        {"id": 1, "first_name": "Ada", "last_name": "Lovelace"},
        {"id": 4, "first_name": "Katherine", "last_name": "Johnson", "start_date": "2013/05/20 08:30:00 +0000"}]},
     {"id": "99", "name": "Design & Research", "employees": [
        {"id": 2, "first_name": "Grace", "last_name": "Hopper"},
        {"id": 3, "first_name": "Alan", "last_name": "Turing"}]}]
    """#.utf8)

// MARK: The store and the client

let usage = """
    usage: swift run Departments [path/to/store.sqlite]
      Imports the two payloads into a SQLite file: the one named (kept), or a temporary one
      (removed at the end).
    """
/// The store path given on the command line; `--help` prints the usage, anything else is refused.
let givenPath: String? = {
    var path: String?
    for argument in CommandLine.arguments.dropFirst() {
        if argument == "--help" || argument == "-h" {
            print(usage)
            exit(0)
        }
        guard !argument.hasPrefix("-"), path == nil else {
            FileHandle.standardError.write(Data("Departments: unknown option \(argument)\n\(usage)\n".utf8))
            exit(2)
        }
        path = argument
    }
    return path
}()
let storePath = givenPath
    ?? FileManager.default.temporaryDirectory.appendingPathComponent("departments-\(UUID().uuidString).sqlite").path

/// Removes the temporary store file (not one the user named).
func removeTemporaryStore() {
    guard givenPath == nil else { return }
    for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: storePath + suffix) }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("error: \(message)\n".utf8))
    removeTemporaryStore()
    exit(1)
}

func makeClient(_ store: SQLiteStore) throws -> Client {
    try Client.Builder(models: [Department.self, Employee.self])
        .dateDecoding(DateDecoding([.format("yyyy/MM/dd HH:mm:ss Z"), .iso8601]))   // Broker's start dates
        .store(store)
        .build()
}

func fullName(_ employee: Employee) -> String { "\(employee.firstname) \(employee.lastname)" }

func counts(_ client: Client) async throws -> (employees: Int, departments: Int) {
    (try await client.count(Employee.self), try await client.count(Department.self))
}

do {
    let store = try SQLiteStore(path: storePath)
    let client = try makeClient(store)
    print("Store: \(storePath) (SQLite, \(givenPath == nil ? "a temporary file, removed at the end" : "kept"))")

    // Employees with nested departments: Engineering is one department, whatever its id's type.
    let employees = try await client.import(employeesJSON, as: Employee.self)
    var (employeeCount, departmentCount) = try await counts(client)
    print("imported \(employees.count) employees with nested departments: "
        + employees.map { "\(fullName($0)) in \($0.department?.name ?? "?")" }.joined(separator: ", ")
        + "; stored: \(employeeCount) employees, \(departmentCount) departments")

    // Departments with nested employees: found by their keys, updated, moved, one more inserted.
    let departments = try await client.import(departmentsJSON, as: Department.self)
    (employeeCount, departmentCount) = try await counts(client)
    print("imported \(departments.count) departments with nested employees; stored: "
        + "\(employeeCount) employees, \(departmentCount) departments")
    guard employeeCount == 4, departmentCount == 2 else {
        fail("expected one object per key (4 employees, 2 departments), found \(employeeCount) and \(departmentCount)")
    }

    // The graph, read back from the store, both ways.
    for department in try await client.fetch(Department.self, sortedBy: [.ascending(\.name)]) {
        let names = department.employees.map(fullName).sorted()
        print("department \(department.departmentID) \(department.name): \(names.joined(separator: ", "))")
    }
    let formatter = ISO8601DateFormatter()
    for employee in try await client.fetch(Employee.self, where: .notEqual(\.startDate, nil), sortedBy: [.ascending(\.startDate)]) {
        print("employee \(employee.employeeID) \(fullName(employee)), started \(formatter.string(from: employee.startDate!)), "
            + "in \(employee.department?.name ?? "no department")")
    }

    // The last payload again: every object is found and already up to date, nothing is written.
    let again = try await client.import(departmentsJSON, as: "Department")
    print("re-imported the departments: \(again.inserted.count) inserted, \(again.updated.count) updated, "
        + "\(again.unchanged.count) unchanged")
    guard again.inserted.isEmpty, again.updated.isEmpty else { fail("a re-import of the same payload changed the store") }
    store.close()

    // The file keeps it all.
    let reopened = try SQLiteStore(path: storePath)
    (employeeCount, departmentCount) = try await counts(try makeClient(reopened))
    reopened.close()
    print("reopened \(URL(fileURLWithPath: storePath).lastPathComponent): \(employeeCount) employees, \(departmentCount) departments")
    guard employeeCount == 4, departmentCount == 2 else { fail("the reopened store lost objects") }
} catch {
    fail("\(error)")
}

removeTemporaryStore()
if givenPath == nil { print("removed \(URL(fileURLWithPath: storePath).lastPathComponent)") }
