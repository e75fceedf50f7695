// TetherRails
