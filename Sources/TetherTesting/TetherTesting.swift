// TetherTesting
