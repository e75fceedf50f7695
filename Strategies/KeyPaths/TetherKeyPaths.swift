// TetherKeyPaths
