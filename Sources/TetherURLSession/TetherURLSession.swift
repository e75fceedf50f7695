// TetherURLSession
