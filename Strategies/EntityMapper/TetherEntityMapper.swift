// TetherEntityMapper
