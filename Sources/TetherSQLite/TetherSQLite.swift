// TetherSQLite
